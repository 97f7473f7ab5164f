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

// TestToolCallMCP: an MCP tool is known by its server, from the text backend's banner or from
// kiro's ACP title ("Running: @server/tool", kind other); it is trusted as @server/tool.
func TestToolCallMCP(t *testing.T) {
	for _, c := range []struct {
		t            ToolCall
		server, tool string
		trust        string
	}{
		{ToolCall{Name: "status", Server: "git"}, "git", "status", "@git/status"},
		{ToolCall{Title: "Running: @github/create_issue", Kind: "other"}, "github", "create_issue", "@github/create_issue"},
		{ToolCall{Title: "Running: @github/create_issue"}, "github", "create_issue", "@github/create_issue"}, // a permission request: a title only
		{ToolCall{Title: "Running: @github/create_issue", Kind: "execute"}, "", "", ""},                      // a shell command
		{ToolCall{Title: "Running: ls", Kind: "other"}, "", "", ""},
		{ToolCall{Name: "shell"}, "", "", "shell"},
	} {
		server, tool, ok := c.t.MCP()
		if server != c.server || tool != c.tool || ok != (c.server != "") {
			t.Errorf("%+v: MCP() = %q %q %v", c.t, server, tool, ok)
		}
		if got := c.t.TrustName(); got != c.trust {
			t.Errorf("%+v: TrustName() = %q, want %q", c.t, got, c.trust)
		}
	}
}
