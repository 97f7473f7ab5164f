package sessionrec

import (
	"strings"
	"testing"
)

// TestEnding: the ending a door records is the stop reason ask reports for the same facts, and a
// stop reason of a form no agent uses (it came from the agent and will be printed) is an error.
func TestEnding(t *testing.T) {
	for _, c := range []struct {
		backend, reason             string
		timedOut, cancelled, failed bool
		want                        string
	}{
		{"chat", "end_turn", false, false, false, EndedTurn},
		{"chat", "end_turn", true, false, false, EndedTimedOut},
		{"chat", "end_turn", false, true, false, EndedCancelled},
		{"chat", "end_turn", false, false, true, EndedError},
		{"acp", "end_turn", false, false, false, EndedTurn},
		{"acp", "refusal", false, false, false, EndedRefusal},
		{"acp", "max_tokens", false, false, false, "max_tokens"},
		{"acp", "", false, false, false, EndedError},
		{"acp", "end_turn\x1b]0;x\x07", false, false, false, EndedError},
		{"acp", "END TURN", true, false, false, EndedTimedOut},
	} {
		if got := Ending(c.backend, c.reason, c.timedOut, c.cancelled, c.failed); got != c.want {
			t.Errorf("%+v: %q, want %q", c, got, c.want)
		}
	}
}

// TestEndingNote: a reply that ended whole says nothing; every other ending one bracketed line,
// naming a refused tool when there is one.
func TestEndingNote(t *testing.T) {
	for _, ended := range []string{"", EndedTurn} {
		if n := EndingNote(ended, false, nil); n != "" {
			t.Errorf("%q: %q, want nothing", ended, n)
		}
	}
	shell := []ToolCall{{Name: "read"}, {Name: "shell", Denied: true}, {Name: "fetch", Server: "web", Denied: true}}
	for _, c := range []struct {
		ended     string
		truncated bool
		tools     []ToolCall
		want      []string
	}{
		{EndedTurn, true, nil, []string{"cut at a size limit"}},
		{EndedTimedOut, false, nil, []string{"timeout", "partial"}},
		{EndedTimedOut, true, nil, []string{"cut at a size limit", "timeout"}},
		{EndedCancelled, false, nil, []string{"cancelled"}},
		{EndedError, false, nil, []string{"failed"}},
		{EndedError, false, shell, []string{"permission to use shell, @web/fetch was refused"}},
		{EndedRefusal, false, nil, []string{"refused to go on"}},
		{"max_tokens", false, nil, []string{"stop reason max_tokens"}},
	} {
		n := EndingNote(c.ended, c.truncated, c.tools)
		if !strings.HasPrefix(n, "[qkit: ") || !strings.HasSuffix(n, "]") || strings.Contains(n, "\n") {
			t.Errorf("%+v: %q is not one bracketed line", c, n)
		}
		for _, w := range c.want {
			if !strings.Contains(n, w) {
				t.Errorf("%+v: %q, want %q in it", c, n, w)
			}
		}
	}
}

// TestWithHistorySaysTheEnding: a reply cut short is followed in the history by its note, so the
// model knows the reply was cut; the note counts against the budget.
func TestWithHistorySaysTheEnding(t *testing.T) {
	h := []Message{
		{Role: RoleUser, Text: "q1"}, {Role: RoleAgent, Text: "partial\n", Ended: EndedTimedOut},
		{Role: RoleUser, Text: "q2"}, {Role: RoleAgent, Text: "whole\n", Ended: EndedTurn},
		{Role: RoleUser, Text: "q3"}, {Role: RoleAgent, Text: "", Ended: EndedCancelled},
	}
	got, kept := WithHistory(h, "now?", 10000)
	timedOut := EndingNote(EndedTimedOut, false, nil)
	want := "--- CONVERSATION SO FAR ---\nUser: q1\n\nAssistant: partial\n" + timedOut + "\n\nUser: q2\n\nAssistant: whole\n\n" +
		"User: q3\n\nAssistant: " + EndingNote(EndedCancelled, false, nil) + "\n\n--- END OF CONVERSATION SO FAR ---\n\nnow?"
	if kept != 6 || got != want {
		t.Fatalf("history (%d):\n%s\nwant:\n%s", kept, got, want)
	}
	// A budget that holds the first turn's text but not its note leaves that turn out.
	size := 0
	for _, m := range h[2:] {
		size += len(ReplyText(m)) + 16
	}
	if _, kept := WithHistory(h, "now?", size+len("q1")+16+len("partial\n")+16); kept != 4 {
		t.Fatalf("kept %d, want the note counted", kept)
	}
}
