package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestToolCallMerge(t *testing.T) {
	// Nothing known yet: the update is the call.
	first := ToolCall{ID: "1", Title: "Running: ls", Kind: "execute", Status: ToolPending, Input: json.RawMessage(`{"c":"ls"}`)}
	if got := (ToolCall{}).Merge(first); !reflect.DeepEqual(got, first) {
		t.Fatalf("from nothing: %+v", got)
	}
	// An update replaces what it sets and keeps the rest; Denied and Trusted stay set.
	old := first
	old.Trusted, old.Locations = true, []Location{{Path: "/a"}}
	got := old.Merge(ToolCall{ID: "1", Status: ToolFailed, Denied: true, Output: "no", Diffs: []Diff{{Path: "/a", NewText: "b"}}})
	want := ToolCall{ID: "1", Title: "Running: ls", Kind: "execute", Status: ToolFailed, Trusted: true, Denied: true,
		Locations: []Location{{Path: "/a"}}, Diffs: []Diff{{Path: "/a", NewText: "b"}}, Input: json.RawMessage(`{"c":"ls"}`), Output: "no"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if again := got.Merge(ToolCall{ID: "1", Title: "ls -la", Name: "shell", Server: "s"}); again.Title != "ls -la" || again.Name != "shell" ||
		again.Server != "s" || !again.Denied || !again.Trusted || again.Status != ToolFailed {
		t.Fatalf("second update: %+v", again)
	}
}
