package fullbin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCandidates: beside the executable, then ../libexec/qkit; $QKIT_FULL_BIN alone when set.
func TestCandidates(t *testing.T) {
	t.Setenv(EnvPath, "")
	got := Candidates("/usr/local/bin/qkit")
	want := []string{"/usr/local/bin/qkit-full", "/usr/local/libexec/qkit/qkit-full"}
	if !slices.Equal(got, want) {
		t.Errorf("Candidates = %q, want %q", got, want)
	}
	t.Setenv(EnvPath, "/opt/q/full")
	if got := Candidates("/usr/local/bin/qkit"); !slices.Equal(got, []string{"/opt/q/full"}) {
		t.Errorf("with %s: %q", EnvPath, got)
	}
}

// TestFindSkipsWhatIsNotAnExecutable: a folder or a file without the execute bit is no helper,
// and the error names every path looked at.
func TestFindSkipsWhatIsNotAnExecutable(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, plain} {
		t.Setenv(EnvPath, p)
		if _, err := Find(); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not installed") {
			t.Errorf("%s: %v", p, err)
		}
	}
	exe := filepath.Join(dir, Name)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPath, exe)
	if got, err := Find(); err != nil || got != exe {
		t.Errorf("Find = %q, %v", got, err)
	}
}
