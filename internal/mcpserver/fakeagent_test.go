package mcpserver_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parallelWaits lets up to 4 parallel tests run at once, unless -test.parallel is given: they
// mostly wait on agent processes (timeouts of seconds), not on the CPU that the default,
// GOMAXPROCS, is counted for (4 ran as fast as 8 here, with fewer agents alive at once).
func parallelWaits() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "4")
	}
}

// fakeAgent is the fake agent (this test binary, fakeqtest.Main) as a command of the test's own:
// a script in a temporary folder that reads the fake's knobs from a file beside it and runs the
// binary (with exec: the agent's pid is the script's). Unlike fakeqtest.Use it sets no variable of
// the test process, so a test that starts its agents this way can run in parallel with others.
type fakeAgent struct {
	t       testing.TB
	command string // agent.command: the script, named as the test binary is
	file    string // the knobs, as shell assignments
	knobs   []string
}

// newFakeAgent writes the script. flavour "" is fakeqtest.Use's fake: the knobs on top of the
// test's environment; "q" or "kiro" is fakeqtest.Flavour's: the fake acting as that agent, with
// every other FAKEQ_ variable, the login variables and NO_COLOR cleared.
func newFakeAgent(t testing.TB, flavour string, knobs ...string) *fakeAgent {
	t.Helper()
	dir := t.TempDir()
	a := &fakeAgent{t: t, command: filepath.Join(dir, filepath.Base(os.Args[0])), file: filepath.Join(dir, "knobs")}
	a.knobs = append(a.knobs, "FAKEQ_AS_Q=1")
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
