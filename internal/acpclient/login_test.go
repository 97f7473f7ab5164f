package acpclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// loggedOut is the fake as kiro-cli acp with no stored login (initialize lists kiro-login) and no
// headless credential: it would wait forever for a device login.
func loggedOut(t *testing.T, env ...string) RunOptions {
	t.Helper()
	o := fake(t, append([]string{"FAKEQ_FLAVOUR=kiro", "FAKEQ_LOGGED_OUT=1", "FAKEQ_ACP_LOGIN=", "KIRO_API_KEY=", "AMAZON_Q_SIGV4="}, env...)...)
	o.Limits.Timeout = 30 * time.Second // a hang shows as TimedOut
	return o
}

// The kiro-login method in initialize, without KIRO_API_KEY, fails the run at once with the text
// runner's *agent.LoginError and its advice; the agent and what it started are gone.
func TestRunLoggedOutFailsAtInitialize(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	o := loggedOut(t, "FAKEQ_GRANDCHILD="+pidFile)
	res, err := Run(t.Context(), o)
	var le *agent.LoginError
	want := filepath.Base(os.Args[0]) + " is not logged in (" + filepath.Base(os.Args[0]) + " acp answered initialize with its kiro-login method, and KIRO_API_KEY is not set): " +
		agent.LoginHint(os.Args[0])
	if !errors.As(err, &le) || err.Error() != want || res.TimedOut {
		t.Fatalf("err %v\nwant %s\nresult %+v", err, want, res.Result)
	}
	gone(t, pidIn(t, pidFile))

	// The agent's environment is the one that counts: a key given only there lets the run go on.
	o = loggedOut(t, "FAKEQ_OUTPUT=answer")
	o.Env = append(o.Env, "KIRO_API_KEY=ci-key")
	if res, err := Run(t.Context(), o); err != nil || res.Output != "answer" {
		t.Fatalf("with KIRO_API_KEY in Env: %v %q", err, res.Output)
	}
	// So does AMAZON_Q_SIGV4, as in CheckLogin.
	o = loggedOut(t, "FAKEQ_OUTPUT=answer", "AMAZON_Q_SIGV4=1", "FAKEQ_ACP_LOGIN=error")
	if _, err := Run(t.Context(), o); !errors.As(err, &le) || !strings.Contains(err.Error(), "session/new: ") {
		t.Fatalf("with AMAZON_Q_SIGV4 the agent is asked (and refuses here): %v", err)
	}
}

// The login probe asks whoami in the agent's environment (RunOptions.Env), not qkit's: here only
// Env makes the test binary the fake, so a whoami run with qkit's environment would not answer as
// the agent and the silent agent would run into its timeout.
func TestLoginProbeUsesTheAgentsEnvironment(t *testing.T) {
	t.Parallel()
	o := fakeEnv(t, "FAKEQ_FLAVOUR=kiro", "FAKEQ_LOGGED_OUT=1", "FAKEQ_ACP_LOGIN=silent", "KIRO_API_KEY=", "AMAZON_Q_SIGV4=")
	o.Limits.LoginProbeAfter, o.Limits.Timeout = 100*time.Millisecond, 5*time.Second
	res, err := Run(t.Context(), o)
	var le *agent.LoginError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `whoami says "Not logged in"`) || res.TimedOut {
		t.Fatalf("err %v, result %+v", err, res.Result)
	}
}

// Probe still finds ACP in a logged-out agent: it answered initialize.
// (Probe runs the agent in this process's environment: serial, t.Setenv.)
func TestProbeLoggedOut(t *testing.T) {
	command := fakeqtest.Use(t, "FAKEQ_FLAVOUR=kiro", "FAKEQ_LOGGED_OUT=1", "FAKEQ_ACP_LOGIN=", "KIRO_API_KEY=", "AMAZON_Q_SIGV4=", "HOME="+t.TempDir())
	if b, why := Probe(t.Context(), command, discard()); b != BackendACP {
		t.Fatalf("%s: %s", b, why)
	}
}

// An agent that does not say it is logged out and then waits without a word: after
// LoginProbeAfter whoami is asked, and its "Not logged in" stops the run with the text runner's
// error. A logged-in agent that is merely slow goes on, after one whoami.
func TestRunSilentLoginProbe(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	o := loggedOut(t, "FAKEQ_ACP_LOGIN=silent", "FAKEQ_GRANDCHILD="+pidFile)
	o.Limits.LoginProbeAfter = 100 * time.Millisecond
	res, err := Run(t.Context(), o)
	var le *agent.LoginError
	name := filepath.Base(os.Args[0])
	want := name + ` is not logged in (it printed nothing for 100ms and ` + name + ` whoami says "Not logged in"; qkit stopped it): ` + agent.LoginHint(os.Args[0])
	if !errors.As(err, &le) || err.Error() != want || res.TimedOut {
		t.Fatalf("err %v\nwant %s\nresult %+v", err, want, res.Result)
	}
	gone(t, pidIn(t, pidFile))

	rec := filepath.Join(t.TempDir(), "argv")
	// The reply comes 2 s into the turn, the probe 50 ms into it: the probe goes first however late
	// a loaded machine runs its timer.
	o = fake(t, "FAKEQ_LOGGED_OUT=", "FAKEQ_GRANDCHILD=", "FAKEQ_OUTPUT=slow answer", "FAKEQ_DELAY=2s", "FAKEQ_RECORD="+rec)
	o.Limits.LoginProbeAfter = 50 * time.Millisecond
	if res, err := Run(t.Context(), o); err != nil || res.Output != "slow answer" {
		t.Fatalf("slow but logged in: %v %q", err, res.Output)
	}
	if data, _ := os.ReadFile(rec); !strings.Contains(string(data), `["whoami"]`) {
		t.Fatalf("no whoami asked: %s", data)
	}

	// Disarmed (negative), the silent agent runs into the timeout instead.
	o = loggedOut(t, "FAKEQ_ACP_LOGIN=silent")
	o.Limits.LoginProbeAfter, o.Limits.Timeout = -1, 500*time.Millisecond
	if res, err := Run(t.Context(), o); err != nil || !res.TimedOut {
		t.Fatalf("probe off: %v %+v", err, res.Result)
	}
}
