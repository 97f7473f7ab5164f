//go:build unix

package contextfiles

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestNamedFileLinkedOutOfCwdIsSkipped: a relative rule that names one file takes nothing when the
// file's real path lies outside the working directory, whether the file itself is the link
// (AmazonQ.md -> ~/.ssh/id_rsa in a cloned repository) or a folder on the way is (docs2 -> ~/.ssh
// and the rule docs2/id_rsa). show lists it as skipped, the prompt's warnings say it once, and add
// refuses it unless forced. A link that stays inside cwd is followed; a path the user typed
// absolute, or under ~, is taken as given.
func TestNamedFileLinkedOutOfCwdIsSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	top := filepath.Dir(cwd)
	secret := filepath.Join(top, "secret")
	key := filepath.Join(secret, "id_rsa")
	tree(t, secret, "id_rsa")
	tree(t, cwd, "real/notes.md")
	symlink(t, key, filepath.Join(cwd, "AmazonQ.md"))
	symlink(t, secret, filepath.Join(cwd, "docs2"))
	symlink(t, "real/notes.md", filepath.Join(cwd, "inside.md"))
	symlink(t, "real", filepath.Join(cwd, "alias"))
	symlink(t, key, filepath.Join(s.home, "key.md"))

	amazon, viaFolder := filepath.Join(cwd, "AmazonQ.md"), filepath.Join(cwd, "docs2", "id_rsa")
	ex := expandRules(t, s, cwd, "AmazonQ.md", "docs2/id_rsa", "./docs2/../AmazonQ.md", "inside.md", "alias/notes.md")
	want := []string{filepath.Join(cwd, "alias", "notes.md"), filepath.Join(cwd, "inside.md")}
	if got := paths(ex); !reflect.DeepEqual(got, want) {
		t.Errorf("files\n got %q\nwant %q", got, want)
	}
	if want := []int{0, 0, 0, 1, 1}; !reflect.DeepEqual(ex.counts, want) {
		t.Errorf("counts %v, want %v", ex.counts, want)
	}
	wantWarnings := []string{
		"skipping " + amazon + ": it links to " + key + ", outside " + cwd,
		"skipping " + viaFolder + ": it links to " + key + ", outside " + cwd,
	}
	if !reflect.DeepEqual(ex.warnings, wantWarnings) {
		t.Errorf("warnings\n got %q\nwant %q", ex.warnings, wantWarnings)
	}

	// Typed by the user: taken as given.
	ex = expandRules(t, s, cwd, amazon, "~/key.md")
	if got, want := paths(ex), []string{filepath.Join(s.home, "key.md"), amazon}; !reflect.DeepEqual(got, want) || len(ex.warnings) != 0 {
		t.Errorf("absolute and ~: files %q (warnings %q), want %q", got, ex.warnings, want)
	}

	// Through Collect and Prompt, as show, prompt, ask and ACP sessions get it.
	if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"AmazonQ.md", "docs2/id_rsa", "inside.md"}, AddOptions{Cwd: cwd, Force: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Collect("", cwd, 0, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSkipped := []Skipped{
		{Path: amazon, Scope: ScopeProfile, Reason: "it links to " + key + ", outside " + cwd, Relative: true, warned: true},
		{Path: viaFolder, Scope: ScopeProfile, Reason: "it links to " + key + ", outside " + cwd, Relative: true, warned: true},
	}
	if !reflect.DeepEqual(rep.Skipped, wantSkipped) || !reflect.DeepEqual(rep.Warnings, wantWarnings) {
		t.Errorf("report skipped %+v\nwarnings %q", rep.Skipped, rep.Warnings)
	}
	prompt, warnings, err := s.Prompt("", cwd, 0, "hi")
	if err != nil || strings.Contains(prompt, "id_rsa") || !strings.Contains(prompt, "real/notes.md") ||
		!reflect.DeepEqual(warnings, wantWarnings) {
		t.Errorf("Prompt = %q, %q, %v", prompt, warnings, err)
	}

	// add refuses both unless forced.
	for _, rule := range []string{"AmazonQ.md", "docs2/id_rsa"} {
		_, err := s.Add(context.Background(), Target{Global: true}, []string{rule}, AddOptions{Cwd: cwd})
		path := filepath.Join(cwd, rule)
		if want := "Invalid path '" + rule + "': " + path + " links to " + key + ", outside " + cwd +
			", so it is never read from here. Use --force to add anyway."; err == nil || err.Error() != want {
			t.Errorf("Add(%s) = %v, want %q", rule, err, want)
		}
	}
}

// TestAddWarnsOfBinaryFile: a binary file named exactly is added, with a warning that its content is
// never sent; a text file or a glob gets none.
func TestAddWarnsOfBinaryFile(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "logo.png"), "\x89PNG\r\n\x1a\n\x00\x00")
	write(t, filepath.Join(cwd, "a.md"), "text")
	var warned []string
	opts := AddOptions{Cwd: cwd, Warn: func(m string) { warned = append(warned, m) }}
	added, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"a.md", "logo.png", "*"}, opts)
	if err != nil || len(added) != 3 {
		t.Fatalf("Add = %q, %v", added, err)
	}
	want := []string{"logo.png is binary or not UTF-8 text, so its content is never sent; it was added anyway (qkit context rm logo.png takes it out)"}
	if !reflect.DeepEqual(warned, want) {
		t.Errorf("warnings %q, want %q", warned, want)
	}
}

// TestFolderRuleOnLinkedEntries: a folder rule lists the links out of it as skipped.
func TestFolderRuleOnLinkedEntries(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, filepath.Dir(cwd), "secret/key")
	tree(t, cwd, "docs/a.md")
	symlink(t, filepath.Join(filepath.Dir(cwd), "secret", "key"), filepath.Join(cwd, "docs", "key.md"))
	ex := expandRules(t, s, cwd, "docs")
	if got := paths(ex); !reflect.DeepEqual(got, []string{filepath.Join(cwd, "docs", "a.md")}) {
		t.Errorf("files %q", got)
	}
	if len(ex.skipped) != 1 || ex.skipped[0].path != filepath.Join(cwd, "docs", "key.md") {
		t.Errorf("skipped %+v", ex.skipped)
	}
}

// FuzzRelativeRuleStaysInside: whatever a relative rule says (a file, a folder, a glob, with ".."
// anywhere), no file it takes really lies outside the folder it is relative to (the working
// directory, or where its leading ".." climb to), though the tree holds links out at every level.
func FuzzRelativeRuleStaysInside(f *testing.F) {
	top := f.TempDir()
	cwd := filepath.Join(top, "a", "work")
	secret := filepath.Join(top, "secret")
	for _, p := range []string{filepath.Join(secret, "id_rsa"), filepath.Join(secret, "sub", "k.md"), filepath.Join(cwd, "docs", "ok.md"), filepath.Join(top, "a", "up.md")} {
		write(f, p, "x\n")
	}
	for link, target := range map[string]string{
		"AmazonQ.md": filepath.Join(secret, "id_rsa"), "docs2": secret, "docs/keys": secret,
		"docs/key.md": filepath.Join(secret, "id_rsa"), "docs/sub": filepath.Join(secret, "sub"), "docs/self": ".",
	} {
		if err := os.Symlink(target, filepath.Join(cwd, link)); err != nil {
			f.Skip("symlinks:", err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(top, "a", "s")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"AmazonQ.md", "docs2/id_rsa", "docs2", "docs2/**", "docs/**", "**", "docs", "docs/key.md",
		"docs/sub/k.md", "../s/id_rsa", "../**", "docs/../AmazonQ.md", "./docs2/../docs/*", "docs/self/keys/*", "*/*"} {
		f.Add(s)
	}
	s := NewStore(filepath.Join(top, "config")).WithHome(filepath.Join(top, "home")).WithWalkLimits(WalkLimits{MaxFiles: 500})
	realTop := realPath(top)
	f.Fuzz(func(t *testing.T, rule string) {
		if rule == "" || filepath.IsAbs(rule) || strings.HasPrefix(rule, "~") || strings.ContainsRune(rule, 0) {
			return
		}
		anchor := realPath(anchorOf(cwd, rule))
		if _, inTop := within(realTop, anchor); !inTop {
			return // climbed above the test's tree: the rest of the machine is not the test's to walk
		}
		ex := s.expand([]ruleRef{{scope: ScopeProfile, text: rule}}, cwd)
		for _, file := range ex.files {
			real, err := filepath.EvalSymlinks(file.path)
			if err != nil {
				continue
			}
			if _, inside := within(anchor, real); !inside {
				t.Fatalf("rule %q took %s, which is really %s, outside %s", rule, file.path, real, anchor)
			}
		}
	})
}
