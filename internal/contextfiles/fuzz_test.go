package contextfiles

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

var profileNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]*$`)

// FuzzProfileName checks that ValidateProfileName accepts exactly the documented pattern (at most 64
// characters), and that an accepted name stays one file inside the profiles folder.
func FuzzProfileName(f *testing.F) {
	for _, s := range []string{"default", "work", "a-b_c", "../x", "a/b", "", ".", "..", "x\x00y", "é", "-a", strings.Repeat("a", 65), "A9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateProfileName(name)
		want := profileNameRE.MatchString(name) && len(name) <= MaxProfileNameLen
		if (err == nil) != want {
			t.Fatalf("ValidateProfileName(%q) = %v, want ok=%v", name, err, want)
		}
		if err != nil {
			return
		}
		s := NewStore("/cfg")
		p := s.profilePath(name)
		if filepath.Dir(p) != s.profilesDir() || filepath.Base(p) != name+".json" {
			t.Fatalf("profile %q maps to %q, outside %s", name, p, s.profilesDir())
		}
	})
}

// FuzzGlobPattern checks the walk's shortcuts against doublestar itself: whenever a path matches a
// pattern, every directory on the way must be entered and the file name must pass the cheap filter.
// It also runs the pattern through resolve, which must not panic on any input.
func FuzzGlobPattern(f *testing.F) {
	seeds := [][2]string{
		{"**/*.md", "a/b/c.md"}, {"docs/*.md", "docs/x.md"}, {"*.go", "main.go"},
		{"a/**/b/*.txt", "a/x/y/b/z.txt"}, {"{a,b}/*.md", "b/x.md"}, {"[ab]*/x?.md", "abc/x1.md"},
		{"a\\*b/*", "a*b/c"}, {"**", "x/y"}, {"*/**/x", "a/x"}, {"a/*.{md,txt}", "a/b.txt"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		s := NewStore("/cfg").WithHome("/home/u")
		if r, err := s.resolve(pattern, "/work"); err == nil && r.glob {
			_ = validPattern(r.pattern)
		}
		if !doublestar.ValidatePattern(pattern) || path == "" || strings.HasPrefix(path, "/") ||
			strings.Contains(path, "//") || strings.HasSuffix(path, "/") {
			return
		}
		if !doublestar.MatchUnvalidated(pattern, path) {
			return
		}
		m := newMatcher(0, resolved{}, pattern)
		segs := strings.Split(path, "/")
		for depth, seg := range segs[:len(segs)-1] {
			if !m.enters(depth, seg) {
				t.Fatalf("pattern %q matches %q but the walk would not enter %q at depth %d", pattern, path, seg, depth)
			}
		}
		if !m.nameMay(segs[len(segs)-1]) {
			t.Fatalf("pattern %q matches %q but the name filter rejects %q", pattern, path, segs[len(segs)-1])
		}
	})
}
