package approval

import (
	"slices"
	"sync"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
)

// Grants are the tools a person allowed always (for a run, or an editor's session), remembered
// by the name --trust-tools would give them (TrustName): the agent's own name, @server/tool for
// an MCP tool, else the usual name of its kind (write for an edit, a delete or a move, shell for
// an execute), else its title. Every door keeps this one rule: `qkit ask`, the MCP tool and
// `acp serve`'s text path through Policy, `acp serve`'s proxy (where the editor decides) directly.
// The zero value holds none; it is safe for concurrent use.
type Grants struct {
	mu    sync.Mutex
	names []string
}

// Allow remembers that a person allowed t always.
func (g *Grants) Allow(t agent.ToolCall) {
	name := TrustName(t)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Contains(g.names, name) {
		g.names = append(g.names, name)
	}
}

// Covers reports whether a person allowed t always: a tool under the same name.
func (g *Grants) Covers(t agent.ToolCall) bool {
	if g == nil {
		return false
	}
	name := TrustName(t)
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.names, name)
}

// CoversAccess reports whether a grant covers a write or a command the agent sent (req): the
// permission for the running tool call it belongs to was granted in this turn (req.Granted), or
// a person allowed always the tool it stands for. acpclient describes a write as a nameless edit
// and a command as a nameless execute, so what covers them is an "allow always" given to a tool
// trusted as write (an edit, a delete or a move with no name of its own, or kiro's write) or as
// shell: a tool with a name of its own (fs_write, @server/tool) covers its own calls only, and
// any other kind (a read, a search) nothing here. g may be nil (no grants).
func (g *Grants) CoversAccess(req acpclient.Access) bool {
	return req.Granted != nil || g.Covers(req.Tool)
}
