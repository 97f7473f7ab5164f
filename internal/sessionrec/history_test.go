package sessionrec

import (
	"strings"
	"testing"
)

func TestWithHistoryDropsOldestFirst(t *testing.T) {
	h := []Message{{Role: RoleUser, Text: "old question"}, {Role: RoleAgent, Text: "old answer"}, {Role: RoleUser, Text: "new question"}, {Role: RoleAgent, Text: "new answer"}}
	got, kept := WithHistory(h, "now?", 1000)
	if kept != 4 || !strings.HasPrefix(got, "--- CONVERSATION SO FAR ---\nUser: old question") || !strings.HasSuffix(got, "now?") {
		t.Fatalf("whole history: %d %q", kept, got)
	}
	got, kept = WithHistory(h, "now?", 60)
	if kept != 2 || strings.Contains(got, "old") || !strings.Contains(got, "User: new question") {
		t.Fatalf("budget of one turn: %d %q", kept, got)
	}
	// Never half a turn: a reply that fits without its question is left out too.
	got, kept = WithHistory(h, "now?", 30)
	if kept != 0 || got != "now?" {
		t.Fatalf("budget below a turn: %d %q", kept, got)
	}
}
