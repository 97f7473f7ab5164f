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

// FuzzMountinfo: parseMountinfo takes any bytes; every type it returns is one field (no space, not
// empty), and a well-formed line after any junk is read.
func FuzzMountinfo(f *testing.F) {
	f.Add([]byte("22 27 0:21 / /proc rw,relatime - proc proc rw\n"))
	f.Add([]byte("24 27 0:6 / /dev rw shared:2 master:1 - devtmpfs devtmpfs rw\n"))
	f.Add([]byte("1 2 3 4 5 6 -\n- - - - - - - -\n\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for dev, typ := range parseMountinfo(data) {
			if typ == "" || strings.ContainsAny(typ, " \t\n") || !strings.Contains(dev, ":") {
				t.Fatalf("device %q, type %q", dev, typ)
			}
		}
		withLine := append(append([]byte{}, data...), "\n9 9 0:999 / /x rw - devtmpfs d rw\n"...)
		if got := parseMountinfo(withLine)["0:999"]; got != "devtmpfs" {
			t.Fatalf("the last line gave %q", got)
		}
	})
}
