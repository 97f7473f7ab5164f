package docgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
)

// TestDocsUpToDate fails when the committed completions/ and man/ differ from what the command tree
// generates now. Fix it with `make docs`.
func TestDocsUpToDate(t *testing.T) {
	streams, _, _, _ := app.Test()
	dir := t.TempDir()
	if err := Generate(cmd.NewRoot(app.New(streams, app.VersionInfo{})), dir); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"completions", "man"} {
		want := readDir(t, filepath.Join(dir, sub))
		got := readDir(t, filepath.Join("..", "..", sub))
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("%s/%s is missing: run make docs", sub, name)
			} else if !bytes.Equal(g, w) {
				t.Errorf("%s/%s is out of date: run make docs", sub, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s/%s is stale (no such command any more): run make docs", sub, name)
			}
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}
