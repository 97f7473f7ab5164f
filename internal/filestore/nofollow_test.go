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
