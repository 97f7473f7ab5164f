package askrun_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/output"
)

func TestOutcome(t *testing.T) {
	var refusals acpclient.Refusals
	refusals.Add(&acpclient.OutsideError{Op: "read", Path: "/w/secret.txt", Root: "/w/work"})
	refused := refusals.Err()
	failed := errors.New("kiro-cli exited 1")
	untrusted := &agent.UntrustedToolError{Command: "kiro-cli", Denied: true, Tools: []agent.ToolCall{{Name: "shell"}}, Trusted: []string{"read"}}
	needs := &approval.NeedsPermissionError{Tool: agent.ToolCall{Title: "Running: ls", Kind: "execute"}}
	notFound := &acpclient.SessionNotFoundError{ID: "s1", Err: &acpclient.AgentError{Code: acpclient.CodeInternal, Message: "Internal error", Details: "session s1 not found"}}
	for _, c := range []struct {
		name        string
		interrupted bool
		res         agent.Result
		runErr      error
		refused     error
		code        int
		msg         string
	}{
		{name: "ok", code: output.ExitOK},
		{name: "refused path, the agent carried on", refused: refused, code: output.ExitFailure,
			msg: "^the agent asked for a path outside the working directory /w/work, which was refused: read /w/secret.txt$"},
		{name: "the agent's failure wins", runErr: failed, refused: refused, code: output.ExitFailure, msg: "^agent failed: kiro-cli exited 1$"},
		{name: "untrusted tool", runErr: untrusted, code: output.ExitFailure, msg: "; to allow it, run again with --trust-tools read,shell (or"},
		{name: "permission needed", runErr: needs, code: output.ExitFailure, msg: "^the agent asked to run"},
		{name: "timeout wins over a refusal", res: agent.Result{TimedOut: true}, refused: refused, code: output.ExitTimeout, msg: "^timed out after 2s"},
		{name: "unknown session", runErr: fmt.Errorf("starting: %w", notFound), code: output.ExitNotFound,
			msg: `^the agent has no session s1 (session/load: the agent answered error -32603: Internal error: session s1 not found); ` +
				`--session completes to the sessions qkit remembers, and a run without --session or --resume opens a new one$`},
		{name: "interrupted", interrupted: true, runErr: failed, refused: refused, code: output.ExitInterrupted, msg: "^interrupted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := askrun.Outcome(c.interrupted, 2*time.Second, c.res, c.runErr, c.refused)
			if got := output.Code(err); got != c.code {
				t.Fatalf("exit %d (%v), want %d", got, err, c.code)
			}
			if c.msg == "" {
				return
			}
			if msg := err.Error(); !matches(msg, c.msg) {
				t.Errorf("message %q, want %q", msg, c.msg)
			}
		})
	}
}

// matches: ^ anchors at the start, $ at the end, else a substring.
func matches(s, want string) bool {
	switch {
	case strings.HasPrefix(want, "^") && strings.HasSuffix(want, "$"):
		return s == want[1:len(want)-1]
	case strings.HasPrefix(want, "^"):
		return strings.HasPrefix(s, want[1:])
	}
	return strings.Contains(s, want)
}
