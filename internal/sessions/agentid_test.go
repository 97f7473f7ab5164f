package sessions

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// hostileAgentID is what a hostile agent can answer session/new with: an OSC that sets the
// terminal's title and a CSI that clears the screen.
const hostileAgentID = "sid\x1b]0;PWNED\x07\x1b[2Jx"

// checkHostileSession: session id, recorded for hostileAgentID, has a uuid of its own, keeps the
// agent's id for session/load, and nothing that prints sessions prints a control character.
func checkHostileSession(t *testing.T, st *Store, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("session id %q: not a uuid", id)
	}
	c, err := st.Continue(ctx, id)
	if err != nil || c.AgentSession != hostileAgentID || c.Session.AgentSession != hostileAgentID {
		t.Fatalf("Continue(%s): %+v %v, want the agent's id kept", id, c, err)
	}
	sums, err := st.Summaries(ctx, Filter{})
	if err != nil || len(sums) != 1 || sums[0].ID != id || sums[0].Turns != 2 {
		t.Fatalf("Summaries: %+v %v", sums, err)
	}
	e, err := st.Export(ctx, id[:8])
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text":     func(b *bytes.Buffer) error { return WriteText(b, e, false) },
		"markdown": func(b *bytes.Buffer) error { return WriteMarkdown(b, e, false) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), id) {
			t.Errorf("%s:\n%q", name, b.String())
		}
	}
}

// TestRecordHostileAgentSessionID: Store.Record (ask on the ACP backend, the MCP tool) does not
// take an agent session id that would drive the terminal as the session's id, and goes on with the
// same session on the next turn in that agent session.
func TestRecordHostileAgentSessionID(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	dir := t.TempDir()
	ex := Exchange{AgentSession: hostileAgentID, Origin: OriginAsk, Cwd: dir, Backend: BackendACP, Turn: Turn{Prompt: "hi", Reply: "hello"}}
	id, err := st.Record(ctx, ex, t0)
	if err != nil {
		t.Fatal(err)
	}
	ex.Turn = Turn{Prompt: "again", Reply: "hello again"}
	if again, err := st.Record(ctx, ex, t0.Add(time.Minute)); err != nil || again != id {
		t.Fatalf("second turn: %q %v, want session %s", again, err, id)
	}
	checkHostileSession(t, st, id)
}

// TestSpoolHostileAgentSessionID: the light binary's spool names the session as the store does
// when it takes the spool in: a uuid, the id the run printed, with the agent's id kept.
func TestSpoolHostileAgentSessionID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spool := sessionrec.Spool{Dir: sessionrec.SpoolDir(dir)}
	ex := Exchange{AgentSession: hostileAgentID, Origin: OriginAsk, Cwd: dir, Backend: BackendACP, Turn: Turn{Prompt: "hi", Reply: "hello"}}
	id, err := spool.Record(ctx, ex, t0)
	if err != nil {
		t.Fatal(err)
	}
	ex.Turn = Turn{Prompt: "again", Reply: "hello again"}
	if again, err := spool.Record(ctx, ex, t0.Add(time.Minute)); err != nil || again != id {
		t.Fatalf("second turn: %q %v, want session %s", again, err, id)
	}
	st, err := Open(ctx, Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SpoolProblem(); err != nil {
		t.Fatal(err)
	}
	checkHostileSession(t, st, id)
}

// An agent whose session id is another stored session's id (another agent's, or one it learned)
// gets a session of its own: nothing is written into the other one.
func TestAgentSessionIDOfAnotherSession(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	now := t0
	other, err := st.Record(ctx, Exchange{Origin: OriginAsk, Cwd: "/p", Backend: BackendText,
		Turn: Turn{Prompt: "mine", Reply: "private"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.Record(ctx, Exchange{Origin: OriginAsk, Cwd: "/q", Backend: BackendACP, AgentSession: other,
		Turn: Turn{Prompt: "injected", Reply: "x"}}, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if id == other {
		t.Fatal("the agent's turn went into the session whose id it gave")
	}
	rec, err := st.Get(ctx, other)
	if err != nil || rec.AgentSession != "" {
		t.Fatalf("the other session: %+v %v", rec, err)
	}
	msgs, _ := st.Messages(ctx, other)
	if len(msgs) != 2 || msgs[0].Text != "mine" {
		t.Fatalf("the other session's transcript: %+v", msgs)
	}
	// The agent's own session goes on under its new id.
	again, err := st.Record(ctx, Exchange{Origin: OriginAsk, Cwd: "/q", Backend: BackendACP, AgentSession: other,
		Turn: Turn{Prompt: "second", Reply: "y"}}, now.Add(2*time.Second))
	if err != nil || again != id {
		t.Fatalf("the second turn went to %s (%v), want %s", again, err, id)
	}
}
