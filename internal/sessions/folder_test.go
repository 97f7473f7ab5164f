package sessions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFolderThroughALink: the sessions of a folder are those recorded in it or through a link to
// it, for the MCP tool's resume (Record with Continue), sessions list --cwd (EachSummary) and acp
// serve's session/list (List), with their limits counting only the folder's sessions. Before,
// each compared the path's text, while ask --session resolved links.
func TestFolderThroughALink(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	real, other := filepath.Join(root, "real"), filepath.Join(root, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "qkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Unix(1_700_000_000, 0)
	record := func(i int, cwd string) string {
		t.Helper()
		id, err := s.Record(ctx, Exchange{Continue: true, Origin: OriginMCP, Cwd: cwd, Turn: Turn{Prompt: fmt.Sprint("p", i), Reply: "r"}}, base.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := record(0, link)
	if again := record(1, real); again != first {
		t.Errorf("resume from the real path started %s instead of going on with %s, recorded through the link", again, first)
	}
	record(2, other)
	// A newer session of the other folder must not take the place of the folder's in a limit of 1.
	for _, dir := range []string{real, link} {
		sums, err := s.Summaries(ctx, Filter{Cwd: dir, Limit: 1})
		if err != nil || len(sums) != 1 || sums[0].ID != first {
			t.Errorf("Summaries of %s: %+v %v, want %s", dir, sums, err, first)
		}
		recs, err := s.List(ctx, dir, "", 1)
		if err != nil || len(recs) != 1 || recs[0].ID != first {
			t.Errorf("List of %s: %+v %v, want %s", dir, recs, err, first)
		}
	}
	if sums, _ := s.Summaries(ctx, Filter{Cwd: other}); len(sums) != 1 || sums[0].ID == first {
		t.Errorf("Summaries of the other folder: %+v", sums)
	}
}
