// Package askrun holds what `qkit ask` decides of a run beside its events: how the run ended
// (Outcome), as ask's error and exit code, and the result object that reports it (Report), the
// same on every backend and in every format.
package askrun

import (
	"errors"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/output"
)

// Outcome maps how a `qkit ask` run ended to the error ask returns, with its exit code
// (output.Code), the same on every backend and in every format; a Result's exit_code, is_error
// and error are this error's. In order: an interrupted run (130); a session the agent does not
// know (acpclient.SessionNotFoundError: 4); a permission nothing gave (1);
// the agent's failure (1, with the hint to trust a tool it did not trust); a timeout (124); a
// refusal (refused: a path outside the working directory, acpclient.Refusals.Err, or a write or a
// command no permission covered under --on-permission fail, approval.Policy.Err: 1, even when
// the agent carried on and ended its turn well). A run that did none of these is nil.
func Outcome(interrupted bool, timeout time.Duration, res agent.Result, runErr, refused error) error {
	var needs *approval.NeedsPermissionError
	var unknown *acpclient.SessionNotFoundError
	switch {
	case runErr != nil && interrupted:
		return Interrupted()
	case errors.As(runErr, &unknown):
		return output.NotFoundf("the agent has no session %s (session/load: %v); --session completes to the sessions qkit "+
			"remembers, and a run without --session or --resume opens a new one", unknown.ID, unknown.Err)
	case errors.As(runErr, &needs):
		return output.Errorf(output.ExitFailure, "%v", needs)
	case runErr != nil:
		// Only a tool the agent did not trust gets the hint: q's approval error after a stream
		// failure is an ordinary failure (the runner says why), not a reason to trust more.
		msg := "agent failed: " + runErr.Error()
		var ut *agent.UntrustedToolError
		if errors.As(runErr, &ut) {
			msg += "; " + ut.Hint(agent.CLITrustFlags)
		}
		return output.Errorf(output.ExitFailure, "%s", msg)
	case res.TimedOut:
		return output.Errorf(output.ExitTimeout, "timed out after %s (--timeout, AGENT_TIMEOUT); the partial output was printed", timeout.Round(time.Millisecond))
	case refused != nil:
		return output.WithCode(output.ExitFailure, refused)
	}
	return nil
}

// Interrupted is ask's error (130) when a signal or the caller stopped the agent, during a run or
// before one (the model list of --list-models and of --model's check): a stop qkit made, not a
// failure of the agent's.
func Interrupted() error {
	return output.WithCode(output.ExitInterrupted, errors.New("interrupted: the agent and everything it started were stopped"))
}
