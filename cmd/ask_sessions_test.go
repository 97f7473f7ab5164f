package cmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// TestAskSessionCompletion: --session completes to what it goes on with here, the sessions qkit
// stored for this folder (through a link to it too), newest first, with their ids through
// termtext: before, it offered the agent's raw ids from acp-sessions.json (a bidi override
// passed), of every folder, while sessions list showed qkit's ids.
func TestAskSessionCompletion(t *testing.T) {
	a, _, _ := testApp(t)
	ctx := context.Background()
	root := t.TempDir()
	here, other, link := filepath.Join(root, "here"), filepath.Join(root, "other"), filepath.Join(root, "link")
	for _, d := range []string{here, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(here, link); err != nil {
		t.Fatal(err)
	}
	// What the agent's ids were: the completion must not offer these any more.
	if err := acpclient.RememberSession(askrun.SessionsFile(a.Config.Paths.State), here, "agent-id"); err != nil {
		t.Fatal(err)
	}
	st, err := sessions.Open(ctx, sessions.Path(a.Config.Paths.Data))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0)
	for i, r := range []sessions.SessionRecord{
		{ID: "s-old", Cwd: here, Title: "older"},
		{ID: "sess\u202eevil", Cwd: link, Title: "stored \u202ebefore SessionIDFor"},
		{ID: "s-other", Cwd: other, Title: "elsewhere"},
		{ID: "s-new", Cwd: here, Title: "newest"},
	} {
		r.CreatedAt, r.UpdatedAt = base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute)
		if err := st.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	a.Dir = here
	want := []string{"s-new\tnewest", `sess\u202eevil` + "\t" + `stored \u202ebefore SessionIDFor`, "s-old\tolder"}
	got := askSessions(ctx, a, "")
	if !slices.Equal(got, want) {
		t.Fatalf("from here: %q, want %q", got, want)
	}
	for _, line := range got {
		if strings.ContainsRune(line, '\u202e') {
			t.Errorf("a completion line carries U+202E as it is: %q", line)
		}
	}
	if got := askSessions(ctx, a, "s-"); !slices.Equal(got, []string{want[0], want[2]}) {
		t.Errorf("completing s-: %q", got)
	}
	a.Dir = filepath.Join(root, "none")
	if got := askSessions(ctx, a, ""); len(got) != 0 {
		t.Errorf("from a folder with no session: %q", got)
	}
}
