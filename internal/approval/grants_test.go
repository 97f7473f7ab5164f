package approval

import (
	"fmt"
	"sync"
	"testing"

	"github.com/qkit-cli/qkit/internal/agent"
)

// TestGrantsCover: a grant covers a tool under the same TrustName, whatever its id or title.
func TestGrantsCover(t *testing.T) {
	edit := agent.ToolCall{ID: "t1", Title: "Writing a.txt", Kind: "edit"}
	var g Grants
	if g.Covers(edit) {
		t.Fatal("the zero Grants cover an edit")
	}
	g.Allow(edit)
	for _, c := range []struct {
		tool agent.ToolCall
		want bool
	}{
		{agent.ToolCall{ID: "t9", Title: "Writing b.txt", Kind: "edit"}, true},
		{agent.ToolCall{ID: "t9", Title: "Deleting b.txt", Kind: "delete"}, true}, // trusted as write too
		{agent.ToolCall{ID: "t9", Title: "write"}, true},                          // a kindless tool under that title
		{agent.ToolCall{ID: "t9", Name: "fs_write", Kind: "edit"}, false},         // a name of its own
		{agent.ToolCall{ID: "t9", Title: "Reading a.txt", Kind: "read"}, false},
		{shell, false},
		{kiroMCP, false},
	} {
		if got := g.Covers(c.tool); got != c.want {
			t.Errorf("after allowing an edit, Covers(%+v) = %v, want %v", c.tool, got, c.want)
		}
	}
	var mcp Grants
	mcp.Allow(kiroMCP)
	if !mcp.Covers(agent.ToolCall{ID: "t3", Title: "Running: @github/create_issue"}) || mcp.Covers(agent.ToolCall{Title: "Running: @github/delete_repo", Kind: "other"}) {
		t.Error("an MCP grant does not cover its own tool only")
	}
	var nilGrants *Grants
	if nilGrants.Covers(edit) || nilGrants.CoversAccess(unaskedWrite) {
		t.Error("nil Grants cover something")
	}
	if !nilGrants.CoversAccess(granted(unaskedWrite, "edit")) {
		t.Error("nil Grants do not let a granted call's write through")
	}
}

// TestGrantsCoverAccess: what covers a write or a command the agent sent without asking.
func TestGrantsCoverAccess(t *testing.T) {
	for _, c := range []struct {
		name    string
		allowed agent.ToolCall // allowed always
		write   bool           // covers unaskedWrite
		command bool           // covers unaskedCommand
	}{
		{"a nameless edit", agent.ToolCall{Title: "Writing x", Kind: "edit"}, true, false},
		{"a nameless move", agent.ToolCall{Title: "Moving x", Kind: "move"}, true, false},
		{"kiro's write", agent.ToolCall{Name: "write", Kind: "edit"}, true, false},
		{"a nameless execute", shell, false, true},
		{"a named edit (fs_write)", agent.ToolCall{Name: "fs_write", Kind: "edit"}, false, false},
		{"a named execute (execute_bash)", agent.ToolCall{Name: "execute_bash", Kind: "execute"}, false, false},
		{"a read", agent.ToolCall{Title: "Reading x", Kind: "read"}, false, false},
		{"an MCP tool", kiroMCP, false, false},
		{"a kindless tool", agent.ToolCall{Title: "Writing x"}, false, false},
	} {
		var g Grants
		g.Allow(c.allowed)
		if got := g.CoversAccess(unaskedWrite); got != c.write {
			t.Errorf("%s allowed always: covers a write %v, want %v", c.name, got, c.write)
		}
		if got := g.CoversAccess(unaskedCommand); got != c.command {
			t.Errorf("%s allowed always: covers a command %v, want %v", c.name, got, c.command)
		}
		if !g.CoversAccess(granted(unaskedWrite, "edit")) {
			t.Errorf("%s allowed always: a granted call's write is not covered", c.name)
		}
	}
}

// TestGrantsConcurrent: Allow and Covers from many goroutines (run with -race); every tool
// allowed is covered once they are done.
func TestGrantsConcurrent(t *testing.T) {
	var g Grants
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				tool := agent.ToolCall{Name: fmt.Sprintf("tool%d_%d", i, j)}
				g.Allow(tool)
				if !g.Covers(tool) {
					t.Errorf("%s not covered right after Allow", tool.Name)
				}
				g.CoversAccess(unaskedWrite)
			}
		})
	}
	wg.Wait()
	for i := range 8 {
		for j := range 50 {
			if !g.Covers(agent.ToolCall{Name: fmt.Sprintf("tool%d_%d", i, j)}) {
				t.Fatalf("tool%d_%d lost", i, j)
			}
		}
	}
	if g.CoversAccess(unaskedWrite) {
		t.Error("named tools cover an unasked write")
	}
}
