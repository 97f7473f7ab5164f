//go:build linux

package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadStateRefusesWhatIsNotAFile: one of qkit's own files that is a FIFO, a device (a zero
// device made in the test's folder, never the system's, where the test may make one), a folder
// or a file over MaxStateSize is refused with its name and kind, without blocking or reading it
// whole, and Update writes nothing over it. A config.yaml linked to /dev/zero ran every command
// out of memory; one that was a FIFO hung `settings get`.
func TestReadStateRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxStateSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder.yaml")
	if err := os.Mkdir(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		want string
		is   error
	}{
		fifo:   {"is a FIFO, not a regular file", ErrNotRegular},
		big:    {"is larger than 1 MiB", ErrTooLarge},
		folder: {"is a folder, not a regular file", ErrNotRegular},
	}
	zero := filepath.Join(dir, "zero")
	if err := syscall.Mknod(zero, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		t.Logf("no device node here (%v): no device case", err)
	} else {
		link := filepath.Join(dir, "config.yaml")
		if err := os.Symlink(zero, link); err != nil {
			t.Fatal(err)
		}
		cases[link] = struct {
			want string
			is   error
		}{"is a device, not a regular file", ErrNotRegular}
	}
	for path, c := range cases {
		_, err := ReadState(path)
		if err == nil || !errors.Is(err, c.is) || !strings.Contains(err.Error(), path+" "+c.want) {
			t.Errorf("ReadState(%s) = %v, want %q", path, err, path+" "+c.want)
		}
		called := false
		err = Update(path, 0o600, 0o700, func([]byte) ([]byte, error) { called = true; return []byte("x"), nil })
		if err == nil || called {
			t.Errorf("Update(%s) = %v, fn called %v: want it refused before fn", path, err, called)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi, err)
	}
	if _, err := ReadState(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}
