package sessionrec

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestSessionIDFor: an agent session id is a qkit session's id only when it prints as it is;
// anything else gives a uuid, the same one each time for the same agent id.
func TestSessionIDFor(t *testing.T) {
	for _, id := range []string{"2f6c1a3e-8b1d-4c8e-9a57-0d3c4b5e6f70", "agent-1", "sess_ABC.42", "séance-東京", strings.Repeat("a", 128)} {
		if got := SessionIDFor(id); got != id {
			t.Errorf("%q: %q, want it kept", id, got)
		}
	}
	for _, id := range []string{
		"sid\x1b]0;PWNED\x07\x1b[2Jx",                         // OSC title and a screen clear
		"a b", "a\tb", "a\nb", "a\rb", "a\u00a0b", "a\u3000b", // spaces of every kind
		"a\u009bb",         // C1 CSI
		"a\u202eb",         // bidi override
		"a\u200bb",         // zero-width space: two ids that look the same
		"a\xffb",           // not UTF-8
		"a\x00b", "a\x7fb", // NUL, DEL
		strings.Repeat("a", 129),
	} {
		got := SessionIDFor(id)
		if _, err := uuid.Parse(got); err != nil || got == id {
			t.Errorf("%q: %q, want a uuid", id, got)
		}
		if again := SessionIDFor(id); again != got {
			t.Errorf("%q: %q then %q, want the same uuid", id, got, again)
		}
	}
	if SessionIDFor("a b") == SessionIDFor("a  b") {
		t.Error("two agent ids gave one uuid")
	}
}
