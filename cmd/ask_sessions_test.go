package cmd

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/askrun"
)

// TestAskSessionsOrder: --session completes to this directory's session first, then the others
// sorted, the same every time; from a directory with no session, all of them sorted.
func TestAskSessionsOrder(t *testing.T) {
	a, _, _ := testApp(t)
	file := askrun.SessionsFile(a.Config.Paths.State)
	root := t.TempDir()
	var want []string
	for _, d := range []string{"a", "b", "c", "d", "e", "f"} {
		dir := filepath.Join(root, d)
		if err := acpclient.RememberSession(file, dir, "id-"+d); err != nil {
			t.Fatal(err)
		}
		want = append(want, "id-"+d+"\t"+dir)
	}
	a.Dir = filepath.Join(root, "elsewhere")
	for range 20 {
		if got := askSessions(a); !slices.Equal(got, want) {
			t.Fatalf("from a directory without a session: %q, want %q", got, want)
		}
	}
	a.Dir = filepath.Join(root, "d")
	here := append([]string{want[3]}, slices.Delete(slices.Clone(want), 3, 4)...)
	for range 20 {
		if got := askSessions(a); !slices.Equal(got, here) {
			t.Fatalf("from d: %q, want %q", got, here)
		}
	}
}
