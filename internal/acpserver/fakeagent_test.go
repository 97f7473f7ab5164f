package acpserver

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
)

// parallelWaits lets up to 4 parallel tests run at once, unless -test.parallel is given: they
// mostly wait on agent processes, not on the CPU that the default, GOMAXPROCS, is counted for
// (4 ran as fast as 8 here, with fewer agents alive at once).
func parallelWaits() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "4")
	}
}

// fakeAgent is the fake q (this test binary, with ACPTEST_AS_Q from TestMain) as a command of the
// test's own: a script in a temporary folder that reads the fake's knobs from a file beside it and
// runs the binary (with exec: the agent's pid is the script's). The test sets no variable of its
// process for the fake (t.Setenv), so it can run in parallel with others.
type fakeAgent struct {
	t       testing.TB
	command string // agent.command: the script, named as the test binary is
	file    string // the knobs, as shell assignments
	knobs   []string
}

// newFakeAgent writes the script. flavour "" is the knobs on top of the test's environment; "q"
// or "kiro" is fakeqtest.Knobs': the fake acting as that agent, with every other FAKEQ_ variable,
// the login variables and NO_COLOR cleared.
func newFakeAgent(t testing.TB, flavour string, knobs ...string) *fakeAgent {
	t.Helper()
	dir := t.TempDir()
	a := &fakeAgent{t: t, command: filepath.Join(dir, filepath.Base(os.Args[0])), file: filepath.Join(dir, "knobs")}
	if flavour != "" {
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FAKEQ_") {
				a.knobs = append(a.knobs, k+"=")
			}
		}
		a.knobs = append(a.knobs, "KIRO_API_KEY=", "AMAZON_Q_SIGV4=", "NO_COLOR=", "FAKEQ_FLAVOUR="+flavour)
	}
	a.set(knobs...)
	script := "#!/bin/sh\n. " + shQuote(a.file) + "\nexec " + shQuote(os.Args[0]) + " \"$@\"\n"
	if err := os.WriteFile(a.command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return a
}

// set changes knobs ("KEY=VALUE") for the runs that start after it, as t.Setenv did for the fake.
func (a *fakeAgent) set(knobs ...string) {
	a.t.Helper()
	a.knobs = append(slices.Clone(a.knobs), knobs...)
	var b strings.Builder
	for _, kv := range a.knobs {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString("export " + k + "=" + shQuote(v) + "\n")
	}
	if err := os.WriteFile(a.file, []byte(b.String()), 0o600); err != nil {
		a.t.Fatal(err)
	}
}

// shQuote quotes s for sh: in single quotes, with each single quote closed, escaped and reopened.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// use makes the options' agent a (a startWith change).
func (a *fakeAgent) use(o *Options) { o.Limits.Command = a.command }

// record is the package's record for a: it makes the fake append each run's argv to a file and
// returns a reader of the runs.
func (a *fakeAgent) record(t *testing.T) func() [][]string {
	t.Helper()
	f, runs := recorded(t)
	a.set("FAKEQ_RECORD=" + f)
	return runs
}

// newProxyAgent is the fake for the proxy path, with a HOME of its own in a temporary folder
// (the fake ACP agent keeps its sessions there), as startProxy gives it.
func newProxyAgent(t *testing.T, knobs ...string) *fakeAgent {
	t.Helper()
	return newFakeAgent(t, "", append([]string{"HOME=" + t.TempDir()}, knobs...)...)
}

// startProxyAgent is startProxy with the agent a.
func startProxyAgent(t *testing.T, db string, a *fakeAgent) *harness {
	t.Helper()
	return startWith(t, db, func(o *Options) { a.use(o); o.Backend = acpclient.BackendACP })
}
