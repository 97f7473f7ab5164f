package acpproxy

import (
	"context"
	"log/slog"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
)

func FuzzSessionID(f *testing.F) {
	f.Add([]byte(`{"sessionId":"a","update":{}}`), "a", "b")
	f.Add([]byte(`{"update":{"x":"\"sessionId\":\"a\""},"sessionId" : "a"}`), "a", "qkit")
	f.Add([]byte(`{"sessionId":"\u0061"}`), "a", "c")
	f.Add([]byte(`[`), "", "x")
	f.Fuzz(func(t *testing.T, params []byte, from, to string) {
		got := sessionIDOf(params)
		out := replaceSessionID(params, from, to)
		if got == "" || got != from || from == to || !utf8.ValidString(to) { // qkit's ids are UUIDs
			return
		}
		// The notification now names qkit's session, whatever the agent's JSON looked like.
		if id := sessionIDOf(out); id != to {
			t.Fatalf("replaceSessionID(%q, %q, %q) = %q, whose sessionId is %q", params, from, to, out, id)
		}
	})
}

// TestProxyDropsNotificationsOfAClosedSession: what an agent still sends for a session closed in
// this connection is dropped, not kept in the early queue for the server's life; a session that
// is loaded again takes its notifications as before.
func TestProxyDropsNotificationsOfAClosedSession(t *testing.T) {
	p := New(context.Background(), Options{Editor: &testEditor{out: &lockedBuf{}}, Logger: slog.New(slog.DiscardHandler)})
	s := &Session{id: "qkit-1", agentID: "agent-1"}
	p.register(s)
	p.Close(context.Background(), "qkit-1")
	note := []byte(`{"sessionId":"agent-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}}`)
	p.notify(acp.ClientMethodSessionUpdate, note)
	p.mu.Lock()
	kept := len(p.early["agent-1"])
	p.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d notifications of a closed session kept", kept)
	}
	// A session not registered yet (the updates that follow session/new) still has them kept
	// while a session/new or load is in flight, and no longer.
	p.notify(acp.ClientMethodSessionUpdate, []byte(`{"sessionId":"agent-0","update":{}}`))
	end := p.beginOpen()
	p.notify(acp.ClientMethodSessionUpdate, []byte(`{"sessionId":"agent-2","update":{}}`))
	p.mu.Lock()
	kept, stray := len(p.early["agent-2"]), len(p.early["agent-0"])
	p.mu.Unlock()
	if kept != 1 || stray != 0 {
		t.Fatalf("early notifications: %d kept during an open (want 1), %d with none in flight (want 0)", kept, stray)
	}
	end()
	p.mu.Lock()
	left := len(p.early)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d unregistered sessions' notifications kept after the open ended (a subagent's would stay for the server's life)", left)
	}
	// Loaded again, the closed one is delivered once more (held until the editor knows it).
	p.register(s)
	p.notify(acp.ClientMethodSessionUpdate, note)
	s.mu.Lock()
	queued := len(s.queued)
	s.mu.Unlock()
	if queued != 1 {
		t.Fatalf("after a load: %d notifications queued, want 1", queued)
	}
}
