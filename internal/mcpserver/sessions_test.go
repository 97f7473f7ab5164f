package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// Every q-developer-agent call is a session of origin mcp in qkit's store; resume continues the
// folder's latest one, as q continues its conversation.
func TestQAgentRecordsSessions(t *testing.T) {
	t.Parallel()
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

// sessionOf is the qkit session a q-developer-agent result names in its _meta.
func sessionOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	id, _ := res.Meta["qkit/session_id"].(string)
	if id == "" {
		t.Fatalf("no qkit/session_id in the result's _meta: %+v", res)
	}
	return id
}

// q-developer-agent returns the qkit session its call was recorded in (_meta qkit/session_id), and
// session_id continues it: on chat the transcript goes before the prompt, and the turn is appended
// to that session.
func TestQAgentSessionIDChat(t *testing.T) {
	t.Parallel()
	cs, d := qServer(t, nil, "FAKEQ_ECHO_PROMPT=1")
	first := call(t, cs, map[string]any{"prompt": "first question"})
	if first.IsError {
		t.Fatalf("%+v", first)
	}
	id := sessionOf(t, first)
	second := call(t, cs, map[string]any{"prompt": "second question", "session_id": id[:8]})
	text := mcptest.Text(second)
	if second.IsError || !strings.Contains(text, "first question") || !strings.HasSuffix(text, "second question\n") {
		t.Fatalf("the history was not replayed: %+v %q", second, text)
	}
	if got := sessionOf(t, second); got != id {
		t.Fatalf("continued in %s, want %s", got, id)
	}
	st, err := sessions.Open(context.Background(), sessions.Path(d.App.Config.Paths.Data))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, _ := st.Messages(context.Background(), id)
	if len(msgs) != 4 || msgs[2].Text != "second question" {
		t.Fatalf("transcript %+v", msgs)
	}
}

// An id the store does not know, or one given with resume, is an error naming what to do; nothing runs.
func TestQAgentSessionIDRefused(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	cs, _ := qServer(t, nil, "FAKEQ_RECORD="+rec)
	for args, want := range map[string]map[string]any{
		"session_id no-such-session: no such session: see qkit sessions list":                                                            {"prompt": "hi", "session_id": "no-such-session"},
		"session_id and resume contradict each other: session_id loads the session it names, resume this directory's last one; give one": {"prompt": "hi", "session_id": "x", "resume": true},
	} {
		res := call(t, cs, want)
		if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, args) {
			t.Fatalf("%v: %+v %q", want, res, text)
		}
	}
	if _, err := os.Stat(rec); err == nil {
		t.Fatal("the agent ran")
	}
}

// resume on the ACP backend in a folder where nothing ran yet is an error in the tool's own words
// (not ask's --resume).
func TestQAgentResumeNothingSaved(t *testing.T) {
	t.Parallel()
	cs, _ := qServer(t, map[string]string{"QKIT_AGENT_BACKEND": "acp"}, `FAKEQ_OUTPUT=ok\n`)
	res := call(t, cs, map[string]any{"prompt": "hi", "resume": true})
	text := mcptest.Text(res)
	if !res.IsError || !strings.Contains(text, "resume: no ACP session was saved for ") ||
		!strings.HasSuffix(text, " yet: a run there without resume saves one") || strings.Contains(text, "--resume") {
		t.Fatalf("%+v %q", res, text)
	}
}

// On the ACP backend session_id loads the agent's session the first call opened.
func TestQAgentSessionIDACP(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "sessions")
	cs, _ := qServer(t, map[string]string{"QKIT_AGENT_BACKEND": "acp"}, "FAKEQ_ACP_SESSIONS="+log, `FAKEQ_OUTPUT=ok\n`)
	id := sessionOf(t, call(t, cs, map[string]any{"prompt": "first"}))
	res := call(t, cs, map[string]any{"prompt": "second", "session_id": id})
	if res.IsError || sessionOf(t, res) != id {
		t.Fatalf("%+v", res)
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), "load session 1") || strings.Contains(string(data), "session 2") {
		t.Fatalf("the second call did not load the first session:\n%s", data)
	}
}

// On the ACP backend the policy's refusals hint in the tool's own parameters (trust-tools,
// yolo-mode), not ask's flags: a write the agent sent without asking, and a tool it asked
// permission for that nothing trusts.
func TestQAgentPolicyErrorsInTheToolsWords(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		knob string
		want string
	}{
		"unasked write": {"FAKEQ_ACP_UNASKED=write:out.txt",
			"the agent did not ask permission for it (fs/write_text_file) and nothing allowed it; to allow it, run again with trust-tools write (or yolo-mode true to trust every tool)"},
		"permission": {"FAKEQ_ACP_TOOLS=shell:echo hi",
			`q Developer command failed: the agent asked to run "Running: echo hi" (execute), which needs permission: nothing allowed it; ` +
				"to allow it, run again with trust-tools shell (or yolo-mode true to trust every tool)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs, _ := qServer(t, map[string]string{"QKIT_AGENT_BACKEND": "acp"}, c.knob, `FAKEQ_OUTPUT=done\n`)
			res := call(t, cs, map[string]any{"prompt": "hi"})
			if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, c.want) || strings.Contains(text, "--") {
				t.Fatalf("%+v\n%q\nwant %q", res, text, c.want)
			}
		})
	}
}

// session_id of a session from another folder is refused, as acp serve's session/load refuses it:
// the agent would work on this folder with another project's conversation. Nothing runs.
func TestQAgentSessionOfAnotherFolder(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	cs, d := qServer(t, nil, "FAKEQ_RECORD="+rec)
	st, err := sessions.Open(context.Background(), sessions.Path(d.App.Config.Paths.Data))
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	id, err := st.Record(context.Background(), sessions.Exchange{Origin: sessions.OriginMCP, Cwd: other, Backend: sessions.BackendText,
		Turn: sessions.Turn{Prompt: "about the other project", Reply: "its secrets"}}, time.Now())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, map[string]any{"prompt": "hi", "session_id": id})
	text := mcptest.Text(res)
	if !res.IsError || !strings.Contains(text, "session_id "+id+": the session belongs to the folder "+other+", not ") || strings.Contains(text, "secrets") {
		t.Fatalf("%+v %q", res, text)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Fatal("the agent ran")
	}
}
