package docgen

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
)

// TestDocsUpToDate fails when the committed completions/ and man/ differ from what the command tree
// generates now. Fix it with `make docs`. The man pages' date (the build's) is not compared.
func TestDocsUpToDate(t *testing.T) {
	streams, _, _, _ := app.Test()
	dir := t.TempDir()
	if err := Generate(cmd.NewRoot(app.New(streams, app.VersionInfo{})), dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"completions", "man"} {
		want := readDir(t, filepath.Join(dir, sub))
		got := readDir(t, filepath.Join("..", "..", sub))
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("%s/%s is missing: run make docs", sub, name)
			} else if !bytes.Equal(undated(g), undated(w)) {
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

// thDate is the date field of a man page's .TH line.
var thDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

func undated(page []byte) []byte { return thDate.ReplaceAll(page, []byte(`$1"DATE"`)) }

// TestManPagesNamedAndDated: each page is titled after its command, and dated as asked.
func TestManPagesNamedAndDated(t *testing.T) {
	streams, _, _, _ := app.Test()
	dir := t.TempDir()
	date := time.Date(2026, time.March, 14, 0, 0, 0, 0, time.UTC)
	if err := Generate(cmd.NewRoot(app.New(streams, app.VersionInfo{})), dir, date); err != nil {
		t.Fatal(err)
	}
	for page, title := range map[string]string{"qkit.1": "QKIT", "qkit-context-add.1": "QKIT-CONTEXT-ADD", "qkit-mcp-serve.1": "QKIT-MCP-SERVE"} {
		data, err := os.ReadFile(filepath.Join(dir, "man", page))
		if err != nil {
			t.Fatal(err)
		}
		if want := `.TH "` + title + `" "1" "Mar 2026" "qkit" "qkit manual"`; !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s lacks %s:\n%s", page, want, data[:min(len(data), 200)])
		}
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if d, err := BuildDate(); err != nil || !d.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("BuildDate with SOURCE_DATE_EPOCH = %v, %v", d, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "soon")
	if _, err := BuildDate(); err == nil {
		t.Error("BuildDate accepted SOURCE_DATE_EPOCH=soon")
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
