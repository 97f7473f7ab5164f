//go:build unix

package contextfiles

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestLinksOutsideTheBaseAreSkipped: a glob or folder rule never takes a file whose real path lies
// outside the rule's base folder, however it is reached; nor does a relative path named exactly
// whose real path lies outside the working directory.
func TestLinksOutsideTheBaseAreSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	secret := filepath.Join(filepath.Dir(cwd), "secret")
	tree(t, secret, "id_rsa", "more/key.md")
	tree(t, cwd, "docs/guide.md", "docs/sub/deep.md", "notes/n.md")
	symlink(t, secret, filepath.Join(cwd, "docs", "keys"))
	symlink(t, filepath.Join(secret, "id_rsa"), filepath.Join(cwd, "docs", "readme.md"))
	symlink(t, "sub", filepath.Join(cwd, "docs", "inner"))                              // inside: followed
	symlink(t, filepath.Join(cwd, "notes"), filepath.Join(cwd, "docs", "sibling"))      // inside cwd, outside docs
	symlink(t, filepath.Join(cwd, "notes", "n.md"), filepath.Join(cwd, "docs", "n.md")) // likewise, a file

	ex := expandRules(t, s, cwd, "docs/**", "docs", "**/*.md", "docs/readme.md")
	want := []string{
		filepath.Join(cwd, "docs", "guide.md"),
		filepath.Join(cwd, "docs", "inner", "deep.md"),
		filepath.Join(cwd, "docs", "n.md"),            // only through **/*.md, whose base is cwd
		filepath.Join(cwd, "docs", "sibling", "n.md"), // only through **/*.md
		filepath.Join(cwd, "docs", "sub", "deep.md"),
		filepath.Join(cwd, "notes", "n.md"),
	}
	if got := paths(ex); !reflect.DeepEqual(got, want) {
		t.Errorf("files\n got %q\nwant %q", got, want)
	}
	// docs/**: guide, inner/deep, sub/deep. docs: guide. **/*.md: guide, inner/deep, n.md,
	// sibling/n.md, sub/deep, notes/n.md. docs/readme.md: nothing, it leads out of cwd.
	if want := []int{3, 1, 6, 0}; !reflect.DeepEqual(ex.counts, want) {
		t.Errorf("counts %v, want %v", ex.counts, want)
	}
	joined := strings.Join(ex.warnings, "\n")
	for _, w := range []string{
		// Not walked at all: outside the base of the whole walk (cwd, from **/*.md).
		"skipping " + filepath.Join(cwd, "docs", "keys") + ": it links to " + secret + ", outside " + cwd + "\n",
		"skipping " + filepath.Join(cwd, "docs", "readme.md") + ": it links to " + filepath.Join(secret, "id_rsa") + ", outside " + filepath.Join(cwd, "docs"),
		"skipping " + filepath.Join(cwd, "docs", "n.md") + ": it links to " + filepath.Join(cwd, "notes", "n.md") + ", outside " + filepath.Join(cwd, "docs"),
		// The walk of the group (based at cwd) enters sibling, but docs/** takes nothing from it.
		"skipping " + filepath.Join(cwd, "docs", "sibling", "n.md") + ": it links to " + filepath.Join(cwd, "notes", "n.md") + ", outside " + filepath.Join(cwd, "docs"),
	} {
		if !strings.Contains(joined+"\n", w) {
			t.Errorf("warnings lack %q:\n%s", w, joined)
		}
	}
	// docs/** and docs both skip readme.md for the same reason: one line.
	line := "skipping " + filepath.Join(cwd, "docs", "readme.md") + ": it links to " + filepath.Join(secret, "id_rsa") + ", outside " + filepath.Join(cwd, "docs") + "\n"
	if strings.Count(joined+"\n", line) != 1 {
		t.Errorf("a warning repeated:\n%s", joined)
	}
	// The links out are listed once each; docs/n.md and docs/sibling/n.md are not, since
	// **/*.md took them from inside its own folder.
	var skipped []string
	for _, sk := range ex.skipped {
		skipped = append(skipped, sk.path+": "+sk.reason)
	}
	if want := []string{
		filepath.Join(cwd, "docs", "keys") + ": it links to " + secret + ", outside " + cwd,
		filepath.Join(cwd, "docs", "readme.md") + ": it links to " + filepath.Join(secret, "id_rsa") + ", outside " + filepath.Join(cwd, "docs"),
	}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped\n got %q\nwant %q", skipped, want)
	}
}

// TestLinkedBaseOutsideCwdIsSkipped: a relative glob or folder rule whose base folder is a link out of
// the folder rules are relative to (the working directory) takes nothing, with a warning: in a
// cloned repository `docs -> ~/.ssh` must not put the key into the prompt of `docs/**` or `docs`,
// nor of `docs/id_rsa`. A base linked to a folder inside cwd is followed; a rule that climbs out
// with ".." is anchored where it climbs to; an absolute or ~ rule's base is taken as given, but
// links out of that base are still not followed.
func TestLinkedBaseOutsideCwdIsSkipped(t *testing.T) {
	s, cwd := newTestStore(t)
	top := filepath.Dir(cwd)
	secret := filepath.Join(top, "secret")
	tree(t, secret, "id_rsa", "sub/key.md")
	tree(t, filepath.Join(top, "other"), "o.md")
	tree(t, cwd, "real/r.md", "x.md")
	symlink(t, secret, filepath.Join(cwd, "docs"))                          // the whole base, out
	symlink(t, "real", filepath.Join(cwd, "alias"))                         // a base linked inside cwd
	symlink(t, filepath.Join(top, "other"), filepath.Join(secret, "outer")) // out of secret
	outside := func(path, real, base string) string {
		return "skipping " + path + ": it links to " + real + ", outside " + base
	}
	docs := filepath.Join(cwd, "docs")
	for _, tc := range []struct {
		name     string
		rules    []string
		files    []string
		counts   []int
		warnings []string
	}{
		{"glob", []string{"docs/**"}, nil, []int{0}, []string{outside(docs, secret, cwd)}},
		{"folder", []string{"docs"}, nil, []int{0}, []string{outside(docs, secret, cwd)}},
		{"inner base", []string{"docs/sub/*.md", "docs/sub"}, nil, []int{0, 0},
			[]string{outside(filepath.Join(docs, "sub"), filepath.Join(secret, "sub"), cwd)}},
		{"both, one warning", []string{"docs/**", "docs", "*.md"}, []string{filepath.Join(cwd, "x.md")}, []int{0, 0, 1},
			[]string{outside(docs, secret, cwd)}},
		{"named exactly", []string{"docs/id_rsa"}, nil, []int{0},
			[]string{outside(filepath.Join(docs, "id_rsa"), filepath.Join(secret, "id_rsa"), cwd)}},
		{"named exactly, absolute", []string{filepath.Join(docs, "id_rsa")}, []string{filepath.Join(docs, "id_rsa")}, []int{1}, nil},
		{"linked inside cwd", []string{"alias/**", "alias"},
			[]string{filepath.Join(cwd, "alias", "r.md")}, []int{1, 1}, nil},
		{"climbing out", []string{"../secret/**"},
			[]string{filepath.Join(secret, "id_rsa"), filepath.Join(secret, "sub", "key.md")}, []int{2},
			[]string{outside(filepath.Join(secret, "outer"), filepath.Join(top, "other"), secret)}},
		{"absolute", []string{filepath.Join(docs, "**")},
			[]string{filepath.Join(docs, "id_rsa"), filepath.Join(docs, "sub", "key.md")}, []int{2},
			[]string{outside(filepath.Join(docs, "outer"), filepath.Join(top, "other"), docs)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := expandRules(t, s, cwd, tc.rules...)
			if got := paths(ex); !reflect.DeepEqual(got, tc.files) {
				t.Errorf("files\n got %q\nwant %q", got, tc.files)
			}
			if !reflect.DeepEqual(ex.counts, tc.counts) {
				t.Errorf("counts %v, want %v", ex.counts, tc.counts)
			}
			if !reflect.DeepEqual(ex.warnings, tc.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", ex.warnings, tc.warnings)
			}
		})
	}

	// A base under ~ is the user's own naming: taken as given.
	home := filepath.Join(top, "home")
	symlink(t, secret, filepath.Join(home, "keys"))
	ex := expandRules(t, s, cwd, "~/keys/*")
	if got, want := paths(ex), []string{filepath.Join(home, "keys", "id_rsa")}; !reflect.DeepEqual(got, want) {
		t.Errorf("~/keys/*: files %q, want %q (warnings %q)", got, want, ex.warnings)
	}

	// The prompt, which every front end builds through Prompt, holds no key.
	if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"docs/**", "docs"}, AddOptions{Cwd: cwd, Force: true}); err != nil {
		t.Fatal(err)
	}
	prompt, warnings, err := s.Prompt("", cwd, 0, "hi")
	if err != nil || prompt != "hi" || !reflect.DeepEqual(warnings, []string{outside(docs, secret, cwd)}) {
		t.Errorf("Prompt = %q, %q, %v", prompt, warnings, err)
	}
	// context add refuses such a rule, saying why, unless forced.
	_, err = s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"docs/sub/**"}, AddOptions{Cwd: cwd})
	if want := "Invalid path 'docs/sub/**': " + filepath.Join(docs, "sub") + " links to " + filepath.Join(secret, "sub") +
		", outside " + cwd + ", so it is never read from here. Use --force to add anyway."; err == nil || err.Error() != want {
		t.Errorf("Add(docs/sub/**) = %v, want %q", err, want)
	}
}

// TestNonRegularFilesAreNeverRead: a FIFO (named, globbed, or linked) is neither listed nor opened
// for a blocking read, and the readers refuse one put in place of a file after the walk.
func TestNonRegularFilesAreNeverRead(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "a.md")
	fifo := filepath.Join(cwd, "pipe.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	symlink(t, "pipe.md", filepath.Join(cwd, "link.md"))

	done := make(chan struct{})
	go func() {
		defer close(done)
		ex := expandRules(t, s, cwd, "*.md", "pipe.md", "link.md")
		if got := paths(ex); !reflect.DeepEqual(got, []string{filepath.Join(cwd, "a.md")}) {
			t.Errorf("files %q", got)
		}
		buf := make([]byte, 64)
		if _, err := checkText(fifo, buf, -1); !errors.Is(err, filestore.ErrNotRegular) {
			t.Errorf("checkText(fifo) = %v, want ErrNotRegular", err)
		}
		if _, err := readInto(fifo, nil); !errors.Is(err, filestore.ErrNotRegular) {
			t.Errorf("readInto(fifo) = %v, want ErrNotRegular", err)
		}
		if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"pipe.md"}, AddOptions{Cwd: cwd, Force: true}); err == nil ||
			!strings.Contains(err.Error(), "is not a regular file or a folder") {
			t.Errorf("Add(fifo) = %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a blocked open of the FIFO never returns
		t.Fatal("reading the context blocked on a FIFO")
	}
}
