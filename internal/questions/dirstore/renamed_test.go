package dirstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// Hand-renamed answers end the wait of an MCP-style Ask again and again while another store (a
// page) follows the changes and lists the sets. (Once, settling checked the set's lock from inside
// its own transition, saw it held, and never settled.)
func TestRenamedAnswersWhileAPageWatches(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "questions")
	a, _ := New(dir, questions.Options{})
	b, _ := New(dir, questions.Options{})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := b.Changes(ctx)
	go func() {
		for range ch {
			b.List()
		}
	}()
	set := storetest.MustSet(t, storetest.LangSet)
	for i := 0; i < 10; i++ {
		got := make(chan error, 1)
		waiting := make(chan struct{})
		tick := storetest.OnceWaiting(func() { close(waiting) })
		go func() {
			_, _, err := a.Ask(context.Background(), set, questions.AskOptions{Source: "mcp", Detachable: true,
				ProgressEvery: time.Millisecond, Progress: func(d time.Duration, _ *questions.Session) { tick(d) }})
			got <- err
		}()
		p, err := b.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		<-waiting // the asker watches its set before the answer lands
		tmp := filepath.Join(dir, p.ID, ".answers.tmp")
		if err := os.WriteFile(tmp, []byte(handAnswers), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, p.ID, AnswersFile)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the renamed answer was never taken", i)
		}
	}
}
