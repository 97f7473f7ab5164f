package mcpserver

import (
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
)

// SetAgentGrace sets how long a stopped agent of d's runs has to end before it is killed, for
// the tests of package mcpserver_test (a hanging agent's grace is always waited out whole).
func SetAgentGrace(d *Deps, g time.Duration) { d.agentGrace = g }

// SetAgentClock makes the agent runs of d count their timeout on c (agent.Limits.Clock), for the
// tests of package mcpserver_test: they move it past the timeout when the agent is where they
// need it instead of waiting for a real timeout.
func SetAgentClock(d *Deps, c agent.Clock) { d.agentClock = c }
