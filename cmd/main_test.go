package cmd

import (
	"testing"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// TestMain lets the test binary act as the agent (fakeqtest.Use, fakeqtest.NewAgent): the
// run-function tests of ask and the servers start it as agent.command. The tests share one process:
// a server's end must not stop every other test's agent (stopEverything).
func TestMain(m *testing.M) {
	stopEverything = func() {}
	fakeqtest.Main(m)
}
