//go:build !qkit_lite

package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// TestParityTranscript: one turn that ends whole, cut at the size cap, at the timeout, or with the
// agent's death, through
// every door that records it (`qkit ask`, the q-developer-agent tool, acp serve's text path and
// its proxy) on both backends, leaves the same stored reply: the agent's own text, without any of
// qkit's notices, and the same ending (ended, truncated). The history the next prompt carries and
// `sessions show` are built from these alone, so they are the same whichever door the turn came
// through. The rows are the parity table's (TestParityTable), driven the same way.
func TestParityTranscript(t *testing.T) {
	parityEnv(t)
	want := map[string]sessionrec.Message{
		"plain reply": {Text: "The answer.\n", Ended: sessionrec.EndedTurn},
		"timeout":     {Text: "partial answer\n", Ended: sessionrec.EndedTimedOut},
		"agent death": {Text: "partial answer\n", Ended: sessionrec.EndedError},
		"cap": {Text: "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13",
			Ended: sessionrec.EndedTurn, Truncated: true},
	}
	var rows sync.WaitGroup
	for _, sc := range parityScenarios() {
		w, ok := want[sc.name]
		if !ok {
			continue
		}
		rows.Go(func() {
			t.Run(sc.name, func(t *testing.T) {
				var cells sync.WaitGroup
				for _, front := range []parityFront{pfAsk, pfMCP, pfACP} {
					for _, b := range []parityBackend{pbChat, pbACP} {
						cells.Go(func() {
							t.Run(string(front)+"/"+string(b), func(t *testing.T) {
								got := parityStoredReply(t, sc, front, b)
								if got.Text != w.Text || got.Ended != w.Ended || got.Truncated != w.Truncated {
									t.Errorf("stored reply %q ended %q truncated %v; want %q ended %q truncated %v",
										got.Text, got.Ended, got.Truncated, w.Text, w.Ended, w.Truncated)
								}
								if h, _ := sessionrec.WithHistory([]sessionrec.Message{{Role: sessionrec.RoleUser, Text: "hello"}, got}, "next", 1<<20); strings.Contains(h, "[TIMED OUT") || strings.Contains(h, "[RESPONSE TRUNCATED") {
									t.Errorf("qkit's notice in the history: %q", h)
								}
							})
						})
					}
				}
				cells.Wait()
			})
		})
	}
	rows.Wait()
}

// TestTextPathRefusalStored: when the editor refuses a tool on acp serve's text path, the
// transcript keeps what the agent said and the refusal as data (error, the call denied), which the
// history words as the refusal of that tool; qkit's notice to the editor is not stored.
func TestTextPathRefusalStored(t *testing.T) {
	parityEnv(t)
	for _, sc := range parityScenarios() {
		if sc.name != "denial" {
			continue
		}
		got := parityStoredReply(t, sc, pfACP, pbChat)
		note := sessionrec.EndingNote(got.Ended, got.Truncated, got.Tools)
		if strings.Contains(got.Text, "Permission to use") || got.Ended != sessionrec.EndedError ||
			!strings.Contains(note, "permission to use shell was refused") {
			t.Fatalf("stored %q ended %q tools %+v: note %q", got.Text, got.Ended, got.Tools, note)
		}
	}
}

// parityStoredReply runs sc once through front on backend b and returns the reply its session
// store kept. ask records a chat run only in a stored session it continues (--session), so ask's
// cells continue one made for the purpose, in this folder, on both backends.
func parityStoredReply(t *testing.T, sc parityScenario, front parityFront, b parityBackend) sessionrec.Message {
	t.Helper()
	a, out := parityApp(t, sc, b, "")
	st, err := sessions.Open(t.Context(), sessionsPath(a))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id string
	switch front {
	case pfAsk:
		dir, _ := filepath.Abs(".")
		id, err = st.Record(t.Context(), sessions.Exchange{Origin: sessions.OriginAsk, Cwd: dir, Backend: sessions.BackendText,
			Turn: sessions.Turn{Prompt: "before", Reply: "earlier", Ended: sessionrec.EndedTurn}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sc.askFlags = func(o *askOptions) { o.events.session = id }
		o := parityAsk(t, a, out, sc, b)
		t.Logf("ask: %s", o)
	case pfMCP:
		o := parityMCP(t, a, sc)
		t.Logf("mcp: %s", o)
		id = onlySession(t, st, a)
	default:
		o := parityACPServe(t, a, sc)
		t.Logf("acp serve: %s", o)
		id = o.session
	}
	msgs, err := st.Messages(context.Background(), id)
	if err != nil || len(msgs) < 2 || msgs[len(msgs)-1].Role != sessionrec.RoleAgent || msgs[len(msgs)-2].Text != "hello" {
		t.Fatalf("session %s: %+v %v", id, msgs, err)
	}
	return msgs[len(msgs)-1]
}

// onlySession is the one session a's store holds.
func onlySession(t *testing.T, st *sessions.Store, a *app.App) string {
	t.Helper()
	list, err := st.List(t.Context(), "", "", 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions in %s: %+v %v", sessionsPath(a), list, err)
	}
	return list[0].ID
}
