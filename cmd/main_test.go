package cmd

import (
	"testing"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// TestMain lets the test binary act as the agent (fakeqtest.Use, fakeqtest.NewAgent): the
// run-function tests of ask and the servers start it as agent.command.
func TestMain(m *testing.M) { fakeqtest.Main(m) }
