package acpserver

import (
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// newFakeAgent is fakeqtest.NewAgent for this package's fake q: the test binary, which TestMain
// turns into the fake (ACPTEST_AS_Q).
func newFakeAgent(t testing.TB, flavour string, knobs ...string) *fakeqtest.Agent {
	t.Helper()
	return fakeqtest.NewAgent(t, flavour, knobs...)
}

// useAgent makes the options' agent a (a startWith change).
func useAgent(a *fakeqtest.Agent) func(*Options) {
	return func(o *Options) { o.Limits.Command = a.Command }
}

// recordRuns is the package's record for a: it makes the fake append each run's argv to a file
// and returns a reader of the runs.
func recordRuns(t *testing.T, a *fakeqtest.Agent) func() [][]string {
	t.Helper()
	f, runs := recorded(t)
	a.Set("FAKEQ_RECORD=" + f)
	return runs
}

// newProxyAgent is the fake for the proxy path (it keeps its sessions in the HOME NewAgent gives
// it, as startProxy's fake does).
func newProxyAgent(t *testing.T, knobs ...string) *fakeqtest.Agent {
	t.Helper()
	return newFakeAgent(t, "", knobs...)
}

// startProxyAgent is startProxy with the agent a.
func startProxyAgent(t *testing.T, db string, a *fakeqtest.Agent) *harness {
	t.Helper()
	return startWith(t, db, func(o *Options) { useAgent(a)(o); o.Backend = acpclient.BackendACP })
}
