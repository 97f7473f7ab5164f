package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A file a person names on the command line (ask -o, sessions export -o) is written the way a
// shell's > writes it, except that a regular file is never left torn:
//   - /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N (and links to them) are qkit's own
//     open descriptors: written there, as a shell would, so `-o /dev/stdout` and `-o >(jq .)` work
//     and nothing the descriptor already holds is truncated or unlinked;
//   - a device, a FIFO or another process's descriptor is written through, never replaced (as root,
//     replacing /dev/null or a reader's FIFO with a file would break the system or the reader);
//   - a regular file (through any links) is replaced atomically and keeps its permissions;
//   - a new file gets perm less the umask, as a shell's > would create it.
// Links are followed to their file; a link to nothing is refused rather than replaced.

// CheckNamed checks, before any work whose result goes to path, that WriteNamed can write it:
// its folder exists, and path is neither a folder nor a link to nothing.
func CheckNamed(path string) error {
	if path == "" {
		return errors.New("empty output file name")
	}
	if fd, ok := ownDescriptor(path); ok {
		return descriptorOpen(path, fd)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("output file %s: its directory %s does not exist", path, dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("output file %s: %s is not a directory", path, dir)
	}
	fi, err = os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("output file %s is a directory", path)
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(path); lerr == nil {
			return fmt.Errorf("output file %s is a link to %s, which does not exist", path, target)
		}
	case err != nil:
		return fmt.Errorf("output file %s: %w", path, err)
	}
	return nil
}

// WriteNamed writes data to path, a file a person named, by the rules above. The folder is not
// created.
func WriteNamed(path string, data []byte, perm fs.FileMode) error {
	if err := CheckNamed(path); err != nil {
		return err
	}
	if fd, ok := ownDescriptor(path); ok {
		return writeDescriptor(path, fd, data)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return replaceNamed(path, data, perm, false)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	real, rerr := filepath.EvalSymlinks(path)
	if !fi.Mode().IsRegular() || rerr != nil || throughProc(path) {
		return writeThrough(path, data)
	}
	return replaceNamed(real, data, fi.Mode().Perm(), true)
}

// ownDescriptor is the descriptor number path names in this process: /dev/stdout, /dev/stderr,
// /dev/fd/N or /proc/self/fd/N, directly or through links.
func ownDescriptor(path string) (int, bool) {
	for range 40 { // the kernel's limit on links followed
		switch clean := filepath.Clean(path); clean {
		case "/dev/stdin":
			return 0, true
		case "/dev/stdout":
			return 1, true
		case "/dev/stderr":
			return 2, true
		default:
			for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
				if n, ok := strings.CutPrefix(clean, prefix); ok {
					fd, err := strconv.Atoi(n)
					return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == n
				}
			}
		}
		target, err := os.Readlink(path)
		if err != nil {
			return 0, false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return 0, false
}

// throughProc says whether one of the links from path leads into /proc (another process's
// descriptor, /proc/PID/fd/N): that is written through, not replaced.
func throughProc(path string) bool {
	for range 40 {
		target, err := os.Readlink(path)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		if target == "/proc" || strings.HasPrefix(filepath.Clean(target), "/proc/") {
			return true
		}
		path = target
	}
	return false
}

// writeThrough opens path, which exists, for writing and writes data: a device or FIFO is written,
// never replaced by a file.
func writeThrough(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// replaceNamed writes data to a new file beside path and renames it over path. The new file is
// created with perm, so the umask applies; keep restores perm exactly (an existing file's mode,
// which the umask must neither loosen nor tighten).
func replaceNamed(path string, data []byte, perm fs.FileMode, keep bool) error {
	dir := filepath.Dir(path)
	var (
		tmp *os.File
		err error
	)
	for range 100 {
		name := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		// O_EXCL: never a link planted at the temporary name.
		tmp, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return commit(tmp, path, data, perm, keep)
}
