package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestWriteAtomicReplacesAndSetsMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.json")
	if err := WriteAtomic(path, []byte("one"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("two"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "two" {
		t.Fatalf("content = %q", got)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

func TestUpdateConcurrentWritersLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := Update(path, 0o600, 0o700, func(old []byte) ([]byte, error) {
				return append(old, []byte(fmt.Sprintf("%d\n", i))...), nil
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	got, _ := os.ReadFile(path)
	lines := strings.Fields(string(got))
	if len(lines) != 20 {
		t.Fatalf("got %d lines, want 20: %q", len(lines), got)
	}
	seen := map[int]bool{}
	for _, l := range lines {
		n, _ := strconv.Atoi(l)
		seen[n] = true
	}
	if len(seen) != 20 {
		t.Fatalf("lost writes: %v", seen)
	}
}

func TestUpdateNoChangeLeavesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := Update(path, 0o600, 0o700, func([]byte) ([]byte, error) { return nil, ErrNoChange }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file created on ErrNoChange: %v", err)
	}
}

// TestWriteAtomicKeepsSymlink: a file kept elsewhere (a dotfiles repository) and linked into place
// is updated through the link; the link is not replaced by a regular file.
func TestWriteAtomicKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "config.yaml")
	link := filepath.Join(dir, "config", "config.yaml")
	for _, d := range []string{filepath.Dir(target), filepath.Dir(link)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := Update(link, 0o600, 0o700, func(old []byte) ([]byte, error) { return append(old, "+new"...), nil }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(target); string(got) != "old+new" {
		t.Fatalf("target = %q", got)
	}
}
