// Package fakeqtest lets a package's test binary act as the stand-in agent (internal/fakeq): the
// tests start os.Args[0] as the agent command, and in that child Main runs the fake instead of the
// tests.
package fakeqtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/fakeq"
)

// asAgent marks a run of the test binary that is the fake agent.
const asAgent = "FAKEQ_AS_Q"

// Main is a TestMain: the fake agent in a run Use started, the tests otherwise.
func Main(m *testing.M) {
	if os.Getenv(asAgent) == "1" {
		os.Exit(fakeq.Main())
	}
	os.Exit(m.Run())
}

// Use makes the agent commands t starts be the fake, with env ("KEY=VALUE", the fake's knobs) set
// for them (and for t: they are restored when it ends), and returns the command: the test binary.
func Use(t testing.TB, env ...string) string {
	t.Helper()
	t.Setenv(asAgent, "1")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return os.Args[0]
}

// Flavour is Use for the fake acting as flavour (q or kiro), with none of the caller's knobs,
// login variables or NO_COLOR left over to change what it does.
func Flavour(t testing.TB, flavour string, env ...string) string {
	t.Helper()
	Knobs(t, flavour, env...)
	return Use(t)
}

// Knobs sets the fake's knobs for t alone: the flavour (q, kiro, or "" for the bare mechanics)
// and env ("KEY=VALUE"), with every other FAKEQ_ variable, the login variables and NO_COLOR
// cleared. For a package whose test binary becomes the fake its own way (Use does it otherwise).
func Knobs(t testing.TB, flavour string, env ...string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FAKEQ_") {
			t.Setenv(k, "")
		}
	}
	for _, k := range []string{"KIRO_API_KEY", "AMAZON_Q_SIGV4", "NO_COLOR"} {
		t.Setenv(k, "")
	}
	t.Setenv("FAKEQ_FLAVOUR", flavour)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// requireInterop, set by `make test`, turns a missing node or interop/node_modules into a test
// failure: CI must run the tests against the TypeScript stand-in, not skip them.
const requireInterop = "QKIT_REQUIRE_INTEROP"

// TypeScriptAgent is the path of interop/stand-in-agent.js, the second stand-in agent (written on
// the official TypeScript ACP SDK), for a test in any package of the repository (the root is the
// nearest folder above the test's with go.mod). Without node or interop's node_modules the test is
// skipped, or fails when QKIT_REQUIRE_INTEROP is set.
func TypeScriptAgent(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			t.Fatal("fakeqtest: no go.mod above the test's folder")
		}
		root = up
	}
	script := filepath.Join(root, "interop", "stand-in-agent.js")
	missing := func(why string) {
		if os.Getenv(requireInterop) != "" {
			t.Fatalf("%s, and %s is set: run `make nodedeps` (npm ci in interop/)", why, requireInterop)
		}
		t.Skip(why + " (make nodedeps installs interop's packages)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		missing("interop/node_modules is missing")
	}
	return script
}
