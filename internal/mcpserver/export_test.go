package mcpserver

import "time"

// SetAgentGrace sets how long a stopped agent of d's runs has to end before it is killed, for
// the tests of package mcpserver_test (a hanging agent's grace is always waited out whole).
func SetAgentGrace(d *Deps, g time.Duration) { d.agentGrace = g }
