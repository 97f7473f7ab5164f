//go:build unix

package contextfiles

import (
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
// outside the rule's base folder, however it is reached; a path named exactly is taken as given.
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
		filepath.Join(cwd, "docs", "readme.md"),       // only as the exactly named path
		filepath.Join(cwd, "docs", "sibling", "n.md"), // only through **/*.md
		filepath.Join(cwd, "docs", "sub", "deep.md"),
		filepath.Join(cwd, "notes", "n.md"),
	}
	if got := paths(ex); !reflect.DeepEqual(got, want) {
		t.Errorf("files\n got %q\nwant %q", got, want)
	}
	// docs/**: guide, inner/deep, sub/deep. docs: guide. **/*.md: guide, inner/deep, n.md,
	// sibling/n.md, sub/deep, notes/n.md. docs/readme.md: itself.
	if want := []int{3, 1, 6, 1}; !reflect.DeepEqual(ex.counts, want) {
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
}

// TestLinkedBaseIsTakenAsGiven: the base folder a rule names may itself be a link; the files under
// its real path are inside it.
func TestLinkedBaseIsTakenAsGiven(t *testing.T) {
	s, cwd := newTestStore(t)
	elsewhere := filepath.Join(filepath.Dir(cwd), "elsewhere")
	tree(t, elsewhere, "a.md")
	tree(t, cwd, "x.md")
	symlink(t, elsewhere, filepath.Join(cwd, "linked"))
	ex := expandRules(t, s, cwd, "linked/**", "linked")
	want := []string{filepath.Join(cwd, "linked", "a.md")}
	if got := paths(ex); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ex.counts, []int{1, 1}) {
		t.Errorf("files %q counts %v, want %q [1 1] (warnings %q)", got, ex.counts, want, ex.warnings)
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
		if _, err := s.Add(Target{Profile: DefaultProfile}, []string{"pipe.md"}, AddOptions{Cwd: cwd, Force: true}); err == nil ||
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
