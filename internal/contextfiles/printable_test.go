package contextfiles

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"docs/guide.md":                  "docs/guide.md",
		"héllo 日本 ✓":                     "héllo 日本 ✓",
		"a\x1b]52;c;SGVsbG8=\x07b":       `a\x1b]52;c;SGVsbG8=\x07b`,
		"line\nforged: ok\tx\r":          `line\x0aforged: ok\x09x\x0d`,
		"c1\u009b2J del\x7f":             `c1\u009b2J del\x7f`,
		"evil\u202egnp.md \u2066x\u2069": `evil\u202egnp.md \u2066x\u2069`,
		"bad\xff\xfe utf8":               `bad\xff\xfe utf8`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWarningsAreMadePrintable: a file name from a repository reaches stderr (show, prompt, ask)
// with its control characters escaped.
func TestWarningsAreMadePrintable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("control characters in file names")
	}
	s, cwd := newTestStore(t)
	name := "a\x1b[2Jb.md"
	write(t, filepath.Join(cwd, name), "\x00binary")
	if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"*.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	_, warnings, err := s.Prompt("", cwd, 0, "hi")
	if err != nil || len(warnings) != 1 || strings.ContainsRune(warnings[0], 0x1b) || !strings.Contains(warnings[0], `a\x1b[2Jb.md`) {
		t.Errorf("warnings %q, %v", warnings, err)
	}
	rep, err := s.Collect("", cwd, 0, ReportOptions{})
	if err != nil || len(rep.Skipped) != 1 || rep.Skipped[0].Path != filepath.Join(cwd, name) {
		t.Errorf("skipped %+v (JSON keeps the name as it is), %v", rep.Skipped, err)
	}
}
