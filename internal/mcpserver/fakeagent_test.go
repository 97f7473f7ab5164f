package mcpserver_test

import (
	"testing"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// newFakeAgent is fakeqtest.NewAgent for this package's fake: the test binary, which
// fakeqtest.Main turns into the fake when FAKEQ_AS_Q is set.
func newFakeAgent(t testing.TB, flavour string, knobs ...string) *fakeqtest.Agent {
	t.Helper()
	return fakeqtest.NewAgent(t, flavour, append([]string{"FAKEQ_AS_Q=1"}, knobs...)...)
}
