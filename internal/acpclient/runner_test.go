package acpclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
)

// runnerFake is fake with FAKEQ_REPLIES (replies in order), the fake's session log and its
// grandchild's PID file.
func runnerFake(t *testing.T, replies []string, env ...string) (o RunOptions, sessions, gc string) {
	t.Helper()
	return runnerFakeWith(t, fake, replies, env...)
}

// runnerFakeWith is runnerFake on fake or fakeEnv (for a test in parallel).
func runnerFakeWith(t *testing.T, fake func(*testing.T, ...string) RunOptions, replies []string, env ...string) (o RunOptions, sessions, gc string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "replies.txt")
	if err := os.WriteFile(file, []byte(strings.Join(replies, "\n%%\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	sessions, gc = filepath.Join(dir, "sessions.log"), filepath.Join(dir, "gc.pid")
	o = fake(t, append([]string{"FAKEQ_REPLIES=" + file, "FAKEQ_ACP_SESSIONS=" + sessions, "FAKEQ_GRANDCHILD=" + gc}, env...)...)
	return o, sessions, gc
}

// oneProcessOneSession fails unless the fake's log shows one agent process, one session/new, no
// session/load and n session/prompt on that session.
func oneProcessOneSession(t *testing.T, sessions string, n int) {
	t.Helper()
	data, _ := os.ReadFile(sessions)
	log := string(data)
	if strings.Count(log, "start process ") != 1 || strings.Count(log, "new session 1 ") != 1 || strings.Contains(log, "load ") ||
		strings.Count(log, "prompt session 1 ") != n || strings.Contains(log, "session 2") {
		t.Fatalf("want one process, one session and %d prompts on it:\n%s", n, log)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestRunnerPromptsOneSession: a Runner sends every prompt to the session of the first, over the
// one connection; each Result is its own prompt's (reply, usage); the agent runs until Close,
// which stops its whole process group.
func TestRunnerPromptsOneSession(t *testing.T) {
	t.Parallel()
	o, sessions, gc := runnerFake(t, []string{"first answer", "second answer"})
	r := NewRunner(t.Context(), o)
	defer r.Close()
	one, err := r.Prompt(t.Context(), "first")
	if err != nil || one.Output != "first answer" || one.SessionID == "" || one.Usage.Credits != 0.05 || one.ExitCode != -1 {
		t.Fatalf("first: err %v result %+v", err, one)
	}
	two, err := r.Prompt(t.Context(), "second")
	if err != nil || two.Output != "second answer" || two.SessionID != one.SessionID || two.Usage.Credits != 0.05 || two.StopReason != "end_turn" {
		t.Fatalf("second: err %v result %+v", err, two)
	}
	oneProcessOneSession(t, sessions, 2)
	pid := pidIn(t, gc)
	if !alive(pid) {
		t.Fatal("the agent's process group was stopped before Close")
	}
	if code, _ := r.Close(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	gone(t, pid)
	if _, err := r.Prompt(t.Context(), "third"); err == nil {
		t.Fatal("a prompt after Close ran")
	}
}

// TestRunnerTurnCancelKeepsConnection: a prompt whose own context ends (a budget stopping one
// turn) is cancelled, and the next prompt still goes to the same session of the same agent.
func TestRunnerTurnCancelKeepsConnection(t *testing.T) {
	t.Parallel()
	o, sessions, _ := runnerFake(t, []string{"a\nb\nc\nd\ne\nf\n"}, "FAKEQ_INTERVAL=200ms")
	r := NewRunner(t.Context(), o)
	defer r.Close()
	for i := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		r.o.OnEvent = func(ev agent.Event) {
			if ev.Type == agent.EventMessage {
				cancel()
			}
		}
		res, err := r.Prompt(ctx, "go on")
		cancel()
		if !errors.Is(err, context.Canceled) || res.StopReason != "cancelled" || !strings.HasPrefix(res.Output, "a\n") {
			t.Fatalf("prompt %d: err %v result %+v", i+1, err, res)
		}
	}
	oneProcessOneSession(t, sessions, 2)
}

// TestRunnerTimeoutBoundsRun: Limits.Timeout bounds the run, not each prompt: a later prompt is
// cut where the run's time ends (a timeout, not an error), the agent and what it started are
// stopped before Prompt returns, and nothing more is sent.
func TestRunnerTimeoutBoundsRun(t *testing.T) {
	t.Parallel()
	o, sessions, gc := runnerFakeWith(t, fakeEnv, []string{"not yet"}, "FAKEQ_DELAY=2s")
	o.Limits.Timeout = 3 * time.Second
	r := NewRunner(t.Context(), o)
	defer r.Close()
	one, err := r.Prompt(t.Context(), "first")
	if err != nil || one.TimedOut || one.Output != "not yet" {
		t.Fatalf("first: err %v result %+v", err, one)
	}
	two, err := r.Prompt(t.Context(), "second")
	if err != nil || !two.TimedOut || two.Body() != "" || !strings.Contains(two.Output, "timeout of 3 seconds") {
		t.Fatalf("second: err %v result %+v", err, two)
	}
	gone(t, pidIn(t, gc))
	if _, err := r.Prompt(t.Context(), "third"); err == nil {
		t.Fatal("a prompt after the timeout ran")
	}
	oneProcessOneSession(t, sessions, 2)
}

// TestRunnerCancelled: the run's own context ending between two prompts stops the agent; the
// next prompt is not sent and says it was cancelled.
func TestRunnerCancelled(t *testing.T) {
	t.Parallel()
	o, sessions, gc := runnerFake(t, []string{"one"})
	ctx, cancel := context.WithCancel(t.Context())
	r := NewRunner(ctx, o)
	defer r.Close()
	if _, err := r.Prompt(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := r.Prompt(ctx, "second"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	gone(t, pidIn(t, gc))
	oneProcessOneSession(t, sessions, 1)
}

// TestRunnerSessionFails: a session/new the agent refuses ends the run: the agent is stopped
// before Prompt returns, and a later prompt is not sent on a session that does not exist.
func TestRunnerSessionFails(t *testing.T) {
	t.Parallel()
	o, sessions, gc := runnerFake(t, []string{"never"}, "FAKEQ_LOGGED_OUT=1", "FAKEQ_ACP_LOGIN=error", "KIRO_API_KEY=k")
	r := NewRunner(t.Context(), o)
	defer r.Close()
	if _, err := r.Prompt(t.Context(), "first"); err == nil {
		t.Fatal("no error from a refused session/new")
	}
	gone(t, pidIn(t, gc))
	if _, err := r.Prompt(t.Context(), "second"); err == nil {
		t.Fatal("a prompt after a failed session/new went out")
	}
	if data, _ := os.ReadFile(sessions); strings.Contains(string(data), "prompt ") || strings.Count(string(data), "start process ") != 1 {
		t.Fatalf("sessions:\n%s", data)
	}
}
