package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunIntoAFreshFolder: make install runs gendocs with -dir bin/docs, a folder with nothing in
// it; writing cmd/internal_commands.txt there failed, and the install with it.
func TestRunIntoAFreshFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "docs")
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cmd/internal_commands.txt", "man/qkit.1", "completions/qkit.bash"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
