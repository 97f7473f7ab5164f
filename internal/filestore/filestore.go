// Package filestore holds the two primitives every on-disk write in qkit goes through: an atomic
// replace (temp file in the same directory, fsync, rename) and an advisory lock on a sibling ".lock"
// file. Together they make a read-modify-write safe against concurrent processes and against a crash
// at any instant: a reader sees the old file or the new one, never a torn one.
package filestore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data. The directory is created (with dirPerm) when missing. When
// path is a symbolic link (a config.yaml kept in a dotfiles repository), the file it points to is
// replaced and the link kept. A path that is, or leads to, something other than a regular file (a
// device, a FIFO, a descriptor in /proc) is refused: replacing it with a file would break what it
// is (as root, /dev/null). A file a person names for output goes through WriteNamed instead.
func WriteAtomic(path string, data []byte, perm, dirPerm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("write %s: %w", path, ErrNotRegular)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return ReplaceAtomic(path, data, perm, dirPerm)
}

// ReplaceAtomic is WriteAtomic without following a link: whatever is at path (a symbolic link, a
// FIFO, a file) is replaced by the new file. For files in a folder only qkit writes, where a link
// or device put there must not make qkit write elsewhere or fail to write at all.
func ReplaceAtomic(path string, data []byte, perm, dirPerm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// CreateTemp opens with O_CREATE|O_EXCL: it never follows a link planted at the temporary name.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return commit(tmp, path, data, perm, true)
}

// commit writes data to tmp, a new file beside path, sets its mode to perm when chmod is set,
// makes it durable and renames it over path. tmp is closed, and removed unless it became path.
func commit(tmp *os.File, path string, data []byte, perm fs.FileMode, chmod bool) error {
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if chmod {
		if err := tmp.Chmod(perm); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			_ = tmp.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	committed = true
	syncDir(filepath.Dir(path))
	return nil
}

// Lock is an exclusive advisory lock held on a file beside the one it protects.
type Lock struct {
	f *os.File
}

// LockFor takes an exclusive lock on path+".lock", blocking until it is free. The lock is released by
// Unlock or, should the process die, by the kernel.
func LockFor(path string, dirPerm fs.FileMode) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	name := path + ".lock"
	f, err := OpenNoFollow(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. It is safe to call on a nil Lock.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}

// Update runs fn under the lock for path: fn gets the current content (nil when the file does not exist)
// and returns the new content, which is written atomically. Returning ErrNoChange leaves the file alone.
func Update(path string, perm, dirPerm fs.FileMode, fn func(old []byte) ([]byte, error)) error {
	lock, err := LockFor(path, dirPerm)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	data, err := fn(old)
	if errors.Is(err, ErrNoChange) {
		return nil
	}
	if err != nil {
		return err
	}
	return WriteAtomic(path, data, perm, dirPerm)
}

// ErrNotRegular is returned by OpenRegular for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by ReadRegular for a file over its limit.
var ErrTooLarge = errors.New("larger than the limit")

// ReadRegular reads the whole of name when it is a regular file of at most limit bytes. Like
// OpenRegular it never blocks on a FIFO or a device (nor on a link to one), and it never reads
// more than limit+1 bytes, whatever the file holds.
func ReadRegular(name string, limit int64) ([]byte, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
	}
	return data, nil
}

// checkRegular returns f when it is a regular file, and closes it otherwise.
func checkRegular(f *os.File) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: ErrNotRegular}
	}
	return f, nil
}

// ErrNoChange, returned by an Update function, means there is nothing to write.
var ErrNoChange = errors.New("no change")
