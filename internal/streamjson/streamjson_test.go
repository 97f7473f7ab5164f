package streamjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/streamjson"
	"github.com/qkit-cli/qkit/internal/streamjson/streamjsontest"
)

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := streamjson.NewWriter(&b)
	w.Event(agent.Event{Type: agent.EventMessage, Text: "hi\n"})
	w.Event(agent.Event{Type: agent.EventToolCall, Tool: &agent.ToolCall{ID: "1", Title: "Running: ls", Kind: "execute", Status: "pending"}})
	if err := w.Result(streamjson.Result{Backend: "acp", StopReason: "end_turn", Output: "hi\n"}); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"message","text":"hi\n"}
{"type":"tool_call","tool":{"id":"1","title":"Running: ls","kind":"execute","status":"pending"}}
{"type":"result","backend":"acp","stop_reason":"end_turn","output":"hi\n","exit_code":0,"agent_exit_code":0,"duration_ms":0,"tools":[]}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if n, err := streamjsontest.ValidateStream([]byte(b.String())); err != nil || n != 3 {
		t.Errorf("%d lines: %v", n, err)
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("reader gone")
}

func TestWriterStopsAtTheFirstFailure(t *testing.T) {
	f := &failing{}
	calls := 0
	w := streamjson.NewWriter(f)
	w.OnError = func(error) { calls++ }
	w.Event(agent.Event{Type: agent.EventMessage, Text: "a"})
	w.Event(agent.Event{Type: agent.EventMessage, Text: "b"})
	if err := w.Result(streamjson.Result{}); err == nil || f.n != 1 || calls != 1 {
		t.Errorf("err %v, %d writes, %d calls", err, f.n, calls)
	}
}

// TestSchemaRefuses: the schema is not a blank check.
func TestSchemaRefuses(t *testing.T) {
	for _, line := range []string{
		`{"type":"speech","text":"x"}`,
		`{"type":"message","text":"x","extra":1}`,
		`{"type":"tool_call"}`,
		`{"type":"tool_call","tool":{"id":"1","kind":"teleport"}}`,
		`{"type":"permission_decided","permission":{"tool":{"id":"1"}}}`,
		`{"type":"usage","usage":{"credits":-1}}`,
		`{"type":"result","backend":"acp","stop_reason":"end_turn","output":"","exit_code":0,"duration_ms":0}`,
		`{"type":"result","backend":"soap","stop_reason":"end_turn","output":"","exit_code":0,"duration_ms":0,"tools":[]}`,
		`not json`,
	} {
		if err := streamjsontest.Validate([]byte(line)); err == nil {
			t.Errorf("accepted %s", line)
		}
	}
	if _, err := streamjsontest.ValidateStream([]byte(`{"type":"message","text":"x"}` + "\n")); err == nil {
		t.Error("a stream without a result line was accepted")
	}
}

func TestStopReason(t *testing.T) {
	cases := []struct {
		backend, agent              string
		timedOut, cancelled, failed bool
		want                        string
	}{
		{"acp", "end_turn", false, false, false, "end_turn"},
		{"acp", "refusal", false, false, true, "refusal"}, // a failed turn keeps the agent's reason
		{"acp", "", false, false, true, streamjson.StopError},
		{"acp", "", false, false, false, streamjson.StopError},
		{"acp", "end_turn", true, false, false, streamjson.StopTimedOut},
		{"acp", "end_turn", false, true, true, "cancelled"},
		{"acp", "cancelled", false, false, true, streamjson.StopError}, // qkit ended the turn for its failure
		{"chat", "end_turn", false, false, false, "end_turn"},
		{"chat", "end_turn", false, false, true, streamjson.StopError}, // chat's end_turn is only assumed
		{"chat", "end_turn", true, false, true, streamjson.StopTimedOut},
	}
	for _, c := range cases {
		if got := streamjson.StopReason(c.backend, c.agent, c.timedOut, c.cancelled, c.failed); got != c.want {
			t.Errorf("%+v: %q", c, got)
		}
	}
}
