package mcpserver_test

import (
	"context"
	"testing"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// Every q-developer-agent call is a session of origin mcp in qkit's store; resume continues the
// folder's latest one, as q continues its conversation.
func TestQAgentRecordsSessions(t *testing.T) {
	cs, d := qServer(t, nil, "FAKEQ_ECHO_PROMPT=1")
	for _, args := range []map[string]any{
		{"prompt": "first question", "trust-tools": "fs_read, fs_write"},
		{"prompt": "second question", "resume": true},
		{"prompt": "a new one"},
	} {
		if res := call(t, cs, args); res.IsError {
			t.Fatalf("%v: %+v", args, res)
		}
	}
	st, err := sessions.Open(context.Background(), sessions.Path(d.App.Config.Paths.Data))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.Summaries(context.Background(), sessions.Filter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("%d sessions (%v), want 2", len(list), err)
	}
	first := list[1]
	rec, err := st.Get(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	first.TrustedTools = rec.TrustedTools
	dir, _ := d.App.WorkingDir()
	if first.Origin != sessions.OriginMCP || first.Turns != 2 || first.Title != "first question" || first.Cwd != dir ||
		len(first.TrustedTools) != 2 || first.TrustedTools[1] != "fs_write" {
		t.Fatalf("first session %+v", first)
	}
	msgs, _ := st.Messages(context.Background(), first.ID)
	if len(msgs) != 4 || msgs[3].Text != "second question\n" {
		t.Fatalf("transcript %+v", msgs)
	}
}
