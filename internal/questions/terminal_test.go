package questions

import (
	"strings"
	"testing"
	"time"
)

// A set that can no longer be answered says what became of it, with its status for scripts.
func TestClosedErrorSaysWhatBecameOfTheSet(t *testing.T) {
	const id = "aaaa1111-1111-4111-8111-111111111111"
	for _, tc := range []struct {
		e    ClosedError
		want string
	}{
		{ClosedError{ID: id, Status: Completed, Reason: "the MCP call was cancelled"}, "question set " + id + " was already answered (completed)"},
		{ClosedError{ID: id, Status: Rejected}, "question set " + id + " was already rejected (rejected)"},
		{ClosedError{ID: id, Status: TimedOut, Reason: "no answer within 30m0s"}, "question set " + id + " timed out before anyone answered (timed_out): no answer within 30m0s"},
		{ClosedError{ID: id, Status: Abandoned, Reason: "request.json is malformed: \x1b]0;x\x07"}, "question set " + id + ` was abandoned (abandoned): request.json is malformed: \x1b]0;x\x07`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.e.Status, got, tc.want)
		}
	}
}

// Rejection reasons and free text are shown escaped too: they come from whoever answered.
func TestPrintSessionEscapesAnswers(t *testing.T) {
	set := mustSet(t, `{"questions":[{"question":"Ship?","header":"Release","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	now := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
	s := &Session{ID: "aaaa1111-1111-4111-8111-111111111111", Request: &Request{Source: "mcp", Questions: set.Questions},
		Status:  Status{Status: Completed, CallID: "c", CreatedAt: now.Add(-5 * time.Second)},
		Answers: &Answers{Answers: []Answer{{QuestionIndex: 0, Selected: []string{}, Other: "fine\u202e\x1b[2J"}}}}
	var b strings.Builder
	PrintSession(&b, s, now)
	if want := `   → Other: "fine\u202e\x1b[2J"` + "\n"; !strings.HasSuffix(b.String(), want) {
		t.Fatalf("got\n%s\nwant it to end with %q", b.String(), want)
	}
	s.Status = Status{Status: Rejected, CallID: "c", CreatedAt: now, RejectionReason: "later\x1b]52;c;eA==\x07"}
	b.Reset()
	PrintSession(&b, s, now)
	if want := `Rejected: later\x1b]52;c;eA==\x07` + "\n"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "\x1b") {
		t.Fatalf("got\n%s", b.String())
	}
}
