package fakeqtest

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ParallelWaits lets up to 4 parallel tests run at once, unless -test.parallel is given: for a
// TestMain of a package whose parallel tests mostly wait on agent processes (timeouts of seconds),
// not on the CPU that the default, GOMAXPROCS, is counted for (4 ran as fast as 8 on two cores,
// with fewer agents alive at once).
func ParallelWaits() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "4")
	}
}

// Agent is the fake agent (the test binary) as a command of the test's own: a script in a
// temporary folder that reads the fake's knobs from a file beside it and runs the binary (with
// exec: the agent's pid is the script's). Unlike Use it sets no variable of the test process, so a
// test that starts its agents this way can run in parallel with others.
type Agent struct {
	// Command is agent.command: the script, named as the test binary is (the agent's kind and
	// qkit's messages are the same as for the binary itself).
	Command string
	t       testing.TB
	file    string // the knobs, as shell assignments
	knobs   []string
}

// NewAgent writes the script. flavour "" is the knobs on top of the test's environment; "q" or
// "kiro" is Knobs': the fake acting as that agent, with every other FAKEQ_ variable, the login
// variables and NO_COLOR cleared. knobs ("KEY=VALUE") include what makes the binary the fake
// (FAKEQ_AS_Q=1 for Main) when its TestMain does not do that itself. The fake's HOME is a
// temporary folder unless knobs give one: the fake ACP agent keeps its sessions there, and a test
// must not write into the home of whoever runs it.
func NewAgent(t testing.TB, flavour string, knobs ...string) *Agent {
	t.Helper()
	dir := t.TempDir()
	a := &Agent{t: t, Command: filepath.Join(dir, filepath.Base(os.Args[0])), file: filepath.Join(dir, "knobs")}
	a.knobs = append(a.knobs, "HOME="+filepath.Join(dir, "home"))
	if flavour != "" {
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FAKEQ_") {
				a.knobs = append(a.knobs, k+"=")
			}
		}
		a.knobs = append(a.knobs, "KIRO_API_KEY=", "AMAZON_Q_SIGV4=", "NO_COLOR=", "FAKEQ_FLAVOUR="+flavour)
	}
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	a.Set(knobs...)
	script := "#!/bin/sh\n. " + shQuote(a.file) + "\nexec " + shQuote(os.Args[0]) + " \"$@\"\n"
	if err := os.WriteFile(a.Command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return a
}

// Set changes knobs ("KEY=VALUE") for the runs that start after it, as t.Setenv would for the fake.
func (a *Agent) Set(knobs ...string) {
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
