//go:build unix

package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockRefusesPlantedSymlink: a link planted at the .lock path is not followed, so nothing is
// created where it points.
func TestLockRefusesPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	path := filepath.Join(dir, "config.json")
	if err := os.Symlink(target, path+".lock"); err != nil {
		t.Fatal(err)
	}
	l, err := LockFor(path, 0o700)
	if err == nil {
		l.Unlock()
		t.Fatal("LockFor followed a symlink at the lock path")
	}
	if !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("error %q does not say why", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link's target was created: %v", err)
	}
	if err := Update(path, 0o600, 0o700, func([]byte) ([]byte, error) { return []byte("x"), nil }); err == nil {
		t.Fatal("Update wrote through a planted lock link")
	}
}

func TestOpenRegularRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := OpenRegular(fifo); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenRegular(fifo) = %v", err)
	}
	if _, err := OpenRegular(t.TempDir()); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenRegular(dir) = %v", err)
	}
}

// TestReadRegularRefusesDevicesAndCapsSize: a link to /dev/zero is refused without reading it, and a
// regular file over the limit is refused after reading at most limit+1 bytes of it.
func TestReadRegularRefusesDevicesAndCapsSize(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(zero, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadRegular(link to /dev/zero) = %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 11), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(big, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadRegular(11 bytes, limit 10) = %v", err)
	}
	if data, err := ReadRegular(big, 11); err != nil || len(data) != 11 {
		t.Fatalf("ReadRegular(11 bytes, limit 11) = %d bytes, %v", len(data), err)
	}
}

// TestReplaceAtomicReplacesLinkAndFIFO: what sits at the path is replaced, never written through.
func TestReplaceAtomicReplacesLinkAndFIFO(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, p := range []string{link, fifo} {
		if err := ReplaceAtomic(p, []byte("new"), 0o600, 0o700); err != nil {
			t.Fatalf("ReplaceAtomic(%s): %v", p, err)
		}
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s after ReplaceAtomic: %v, %v", p, fi, err)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Fatalf("the link's target was written: %q", data)
	}
}
