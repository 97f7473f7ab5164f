package contextfiles

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// tree writes files (relative paths) under root.
func tree(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		write(t, filepath.Join(root, f), f+"\n")
	}
}

func expandRules(t *testing.T, s *Store, cwd string, rules ...string) expansion {
	t.Helper()
	refs := make([]ruleRef, len(rules))
	for i, r := range rules {
		refs[i] = ruleRef{scope: ScopeProfile, text: r}
	}
	return s.expand(refs, cwd)
}

func paths(ex expansion) []string {
	var out []string
	for _, f := range ex.files {
		out = append(out, f.path)
	}
	return out
}

// TestExpandAgreesWithDoublestar compares the grouped, pruned walk with doublestar's own glob over
// the same tree, pattern by pattern and all patterns at once.
func TestExpandAgreesWithDoublestar(t *testing.T) {
	s, cwd := newTestStore(t)
	var files []string
	for i := 0; i < 4; i++ {
		for _, d := range []string{"", "docs/", "docs/api/", "src/pkg/", "a[1]/", "x/y/z/"} {
			files = append(files, fmt.Sprintf("%sf%d.md", d, i), fmt.Sprintf("%sg%d.txt", d, i))
		}
	}
	tree(t, cwd, files...)
	patterns := []string{"**/*.md", "docs/**/*.md", "docs/*.txt", "*.md", "x/**/z/*", "**/f[12].*",
		"{docs,src}/**/*.txt", "src/*/f?.md", "docs/api/**", "**/api/*.md", "a\\[1\\]/*.md"}
	for _, p := range patterns {
		ex := expandRules(t, s, cwd, p)
		want, err := doublestar.FilepathGlob(filepath.Join(cwd, p), doublestar.WithFilesOnly())
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(want)
		if got := paths(ex); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", p, got, want)
		}
		if ex.counts[0] != len(want) {
			t.Errorf("%s: count %d, want %d", p, ex.counts[0], len(want))
		}
	}
	// All at once: each rule keeps its own count, and the union is sorted and de-duplicated.
	ex := expandRules(t, s, cwd, patterns...)
	seen := map[string]bool{}
	for i, p := range patterns {
		want, _ := doublestar.FilepathGlob(filepath.Join(cwd, p), doublestar.WithFilesOnly())
		if ex.counts[i] != len(want) {
			t.Errorf("together, %s: count %d, want %d", p, ex.counts[i], len(want))
		}
		for _, w := range want {
			seen[w] = true
		}
	}
	if len(ex.files) != len(seen) || !sort.SliceIsSorted(ex.files, func(i, j int) bool { return ex.files[i].path < ex.files[j].path }) {
		t.Errorf("union: %d files, want %d, sorted", len(ex.files), len(seen))
	}
}

func TestGroupGlobsNestsBases(t *testing.T) {
	s, cwd := newTestStore(t)
	var globs []resolved
	for _, p := range []string{"docs/api/*.md", "**/*.go", "docs/**/*.txt", "/elsewhere/*.md"} {
		r, err := s.resolve(p, cwd)
		if err != nil {
			t.Fatal(err)
		}
		globs = append(globs, r)
	}
	groups := groupGlobs(globs, []int{0, 1, 2, 3})
	if len(groups) != 2 {
		t.Fatalf("groups = %+v, want 2 (cwd and /elsewhere)", groups)
	}
}

func TestDirectoryIsNotRecursiveAndMissingIsSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "notes/a.txt", "notes/b.md", "notes/deep/c.txt")
	ex := expandRules(t, s, cwd, "notes", "missing.md", "missing/**/*.md")
	want := []string{filepath.Join(cwd, "notes", "a.txt"), filepath.Join(cwd, "notes", "b.md")}
	if got := paths(ex); !reflect.DeepEqual(got, want) || len(ex.warnings) != 0 {
		t.Fatalf("got %q (warnings %q), want %q", got, ex.warnings, want)
	}
}

func TestTildeAndGlobalScopeWins(t *testing.T) {
	s, cwd := newTestStore(t)
	home := s.home
	tree(t, home, "rules/a.md")
	refs := []ruleRef{{ScopeProfile, "~/rules/*.md"}, {ScopeGlobal, "~/rules/a.md"}}
	ex := s.expand(refs, cwd)
	if len(ex.files) != 1 || ex.files[0].scope != ScopeGlobal || ex.files[0].path != filepath.Join(home, "rules", "a.md") {
		t.Fatalf("files = %+v", ex.files)
	}
}

func TestSymlinkLoopsAreReportedAndSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "a/x.md", "b/y.md")
	for _, l := range [][2]string{{"a/up", ".."}, {"a/self", "."}, {"a/tob", "../b"}, {"b/toa", "../a"}, {"b/me", "me"}} {
		if err := os.Symlink(l[1], filepath.Join(cwd, l[0])); err != nil {
			t.Skip("symlinks not supported:", err)
		}
	}
	ex := expandRules(t, s, cwd, "**/*.md")
	got := paths(ex)
	for _, want := range []string{filepath.Join(cwd, "a", "x.md"), filepath.Join(cwd, "b", "y.md"), filepath.Join(cwd, "a", "tob", "y.md")} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("missing %s in %q", want, got)
		}
	}
	if len(got) > 6 {
		t.Errorf("loop followed: %q", got)
	}
	joined := strings.Join(ex.warnings, "\n")
	for _, want := range []string{"skipping symlink loop at " + filepath.Join(cwd, "a", "up"), "skipping symlink loop at " + filepath.Join(cwd, "a", "self")} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
}

func TestUnreadableFolderIsReportedAndSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "ok/a.md", "locked/b.md", "locked/deeper/c.md")
	locked := filepath.Join(cwd, "locked")
	var warnings, found []string
	w := walker{
		onMatch: func(_ int, p string) { found = append(found, p) },
		warn:    func(m string) { warnings = append(warnings, m) },
		open: func(name string) (*os.File, error) {
			if name == locked {
				return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
			}
			return os.Open(name)
		},
	}
	r, err := s.resolve("**/*.md", cwd)
	if err != nil {
		t.Fatal(err)
	}
	w.walkGroup(group{base: r.base, root: r.root, matchers: []*matcher{newMatcher(0, r, r.pattern)}})
	want := "skipping unreadable folder " + locked + ": permission denied"
	if len(found) != 1 || len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("files %q, warnings %q; want one file and %q", found, warnings, want)
	}

	// And for real, when not root.
	if os.Geteuid() == 0 {
		return
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	ex := expandRules(t, s, cwd, "**/*.md")
	if got := paths(ex); len(got) != 1 || len(ex.warnings) != 1 || !strings.Contains(ex.warnings[0], "skipping unreadable folder "+locked) {
		t.Fatalf("files %q, warnings %q", got, ex.warnings)
	}
}

func TestCheckText(t *testing.T) {
	dir := t.TempDir()
	buf := make([]byte, 8) // tiny, so multi-byte characters straddle reads
	cases := map[string]bool{
		"plain ascii text": true,
		"héllo wörld — ünïcödé ✓✓✓ 日本語": true,
		"bad \xff byte":       false,
		"nul \x00 byte":       false,
		"cut at end \xe6\x97": false,
		"":                    true,
	}
	i := 0
	for content, ok := range cases {
		p := filepath.Join(dir, fmt.Sprint(i))
		i++
		write(t, p, content)
		size, err := checkText(p, buf, -1)
		if (err == nil) != ok || (ok && size != int64(len(content))) {
			t.Errorf("checkText(%q) = %d, %v; want ok=%v", content, size, err, ok)
		}
	}
}
