//go:build linux

package filestore

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteNamedPermissions: a new file is created as a shell's > would create it (perm less the
// umask), and an existing file keeps its mode, however loose perm is.
func TestWriteNamedPermissions(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.json")
	if err := WriteNamed(fresh, []byte("{}\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file under umask 077: %v %v, want -rw-------", fi.Mode(), err)
	}
	syscall.Umask(0)
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secret, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteNamed(secret, []byte("new"), 0o666); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("existing 0640 file: %v %v after the write, want it kept", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(secret); string(got) != "new" {
		t.Fatalf("content %q", got)
	}
}

// TestWriteNamedWritesThroughDevicesAndFIFOs: a device (through a link) and a FIFO are written,
// not replaced by a regular file: as root, -o /dev/null replaced the system's /dev/null. The
// device is a null device made in the test's folder (never the system's: should this test fail,
// it must not break the machine), where the test may make one.
func TestWriteNamedWritesThroughDevicesAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Logf("no device node here (%v): the FIFO half only", err)
	} else {
		link := filepath.Join(dir, "link-to-null")
		if err := os.Symlink(null, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteNamed(link, []byte("gone\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("the link to the device: %v %v", fi, err)
		}
		if fi, err := os.Stat(null); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("the device was replaced by a file: %v %v", fi.Mode(), err)
		}
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			read <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		read <- string(b)
	}()
	if err := WriteNamed(fifo, []byte(`{"a":1}`+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != `{"a":1}`+"\n" {
		t.Fatalf("the FIFO's reader got %q", got)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi, err)
	}
}

// TestWriteNamedOwnDescriptors: /dev/fd/N (what a shell's >(cmd) passes), /proc/self/fd/N and a
// link to one are this process's descriptor: written there, and left open. The temporary file
// went into /dev/fd before, which failed after the agent had run.
func TestWriteNamedOwnDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := strconv.Itoa(int(w.Fd()))
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink("/proc/self/fd/"+fd, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/fd/" + fd, "/proc/self/fd/" + fd, link} {
		if err := CheckNamed(path); err != nil {
			t.Fatalf("CheckNamed(%s): %v", path, err)
		}
		if err := WriteNamed(path, []byte(path+"\n"), 0o666); err != nil {
			t.Fatalf("WriteNamed(%s): %v", path, err)
		}
	}
	if _, err := w.Write([]byte("still open\n")); err != nil {
		t.Fatalf("the descriptor was closed: %v", err)
	}
	w.Close()
	got, _ := io.ReadAll(r)
	want := "/dev/fd/" + fd + "\n/proc/self/fd/" + fd + "\n" + link + "\nstill open\n"
	if string(got) != want {
		t.Fatalf("the pipe got %q, want %q", got, want)
	}
	if err := CheckNamed("/dev/fd/987654"); err == nil || !strings.Contains(err.Error(), "descriptor 987654 is not open") {
		t.Fatalf("a closed descriptor: %v", err)
	}
}

// TestWriteNamedThroughProc: a link into /proc/PID/fd/N that leads to a regular file is written
// in place (the same file, which its owner holds open), not replaced by a new one.
func TestWriteNamedThroughProc(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "held.txt")
	f, err := os.Create(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := f.Stat()
	link := filepath.Join(dir, "out")
	if err := os.Symlink("/proc/"+strconv.Itoa(os.Getpid())+"/fd/"+strconv.Itoa(int(f.Fd())), link); err != nil {
		t.Fatal(err)
	}
	if err := WriteNamed(link, []byte("in place\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(target)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("%s was replaced by another file (%v)", target, err)
	}
	if got, _ := os.ReadFile(target); string(got) != "in place\n" {
		t.Fatalf("content %q", got)
	}
}

// TestWriteNamedLinks: a link to a regular file has that file replaced and stays a link; a link to
// nothing, a folder and a missing folder are refused before anything is written.
func TestWriteNamedLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteNamed(link, []byte("new"), 0o666); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(real); string(got) != "new" {
		t.Fatalf("the link's file holds %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}

	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("nowhere/x.json", dangling); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		dangling:                                "is a link to nowhere/x.json, which does not exist",
		dir:                                     "is a directory",
		filepath.Join(dir, "missing", "x.json"): "does not exist",
	} {
		if err := WriteNamed(path, []byte("x"), 0o666); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WriteNamed(%s): %v, want %q", path, err, want)
		}
	}
	if target, err := os.Readlink(dangling); err != nil || target != "nowhere/x.json" {
		t.Fatalf("the dangling link changed: %q %v", target, err)
	}
}

// TestWriteAtomicRefusesWhatIsNotAFile: qkit's own files (config, profiles, an agent's write in
// its folder) are replaced only when they are regular files; a link to a FIFO is refused and both
// stay as they were.
func TestWriteAtomicRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link} {
		if err := WriteAtomic(path, []byte("x"), 0o600, 0o700); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("WriteAtomic(%s): %v, want %v", path, err, ErrNotRegular)
		}
	}
	if fi, err := os.Stat(link); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO behind the link changed: %v %v", fi, err)
	}
}
