package askrun

import (
	"errors"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/streamjson"
	"github.com/qkit-cli/qkit/internal/structured"
)

// Run is what a finished `qkit ask` run left behind, on either backend.
type Run struct {
	Backend     string
	Interrupted bool          // ask's own context ended (Ctrl-C, a signal)
	Timeout     time.Duration // the configured limit, for Outcome's message
	Agent       agent.Result
	Err         error               // the runner's error
	Refused     *acpclient.Refusals // paths outside the working directory that were refused; nil on chat
	Denied      []string            // the tools the run's policy refused
	Unasked     []string            // the writes and commands no permission covered, refused (approval.Policy.Refused)
	UnaskedErr  error               // the run's failure from them, under --on-permission fail (approval.Policy.Err)
	Trusted     []string            // what the run trusted (--trust-tools), for the hint of a refusal
	TrustFlags  agent.TrustFlags    // how the front end names its trust flags; zero: ask's
	SessionID   string              // the ACP session
	// StoredSession is the session of qkit's store the turn was recorded in (Options.Sessions).
	StoredSession string
	StopReason    string      // the agent's (ACP); "end_turn" on chat
	Usage         agent.Usage // kiro's, on ACP, summed over the run's prompts
	Started       time.Time
	// Structured is what Options.Structured produced: the validated JSON, each answer checked,
	// the last reply. StructuredErr is what it ended the run with when the agent did not fail:
	// a *structured.NoValidAnswerError (exit 5) or a *structured.BudgetError (exit 6).
	Structured    structured.Result
	StructuredErr error
}

// Report is how ask reports run: the result object (stream-json's last line; --json takes its
// fields) and the error ask returns (Outcome), whose exit code the result carries.
func Report(run Run) (streamjson.Result, error) {
	var refusedErr error
	var refusedPaths []string
	if run.Refused != nil {
		refusedErr, refusedPaths = run.Refused.Err(), run.Refused.Paths()
	}
	if refusedErr == nil {
		refusedErr = run.UnaskedErr // both are exit 1; a path outside the folder is named first
	}
	exitErr := Outcome(run.Interrupted, run.Timeout, run.Agent, run.Err, refusedErr)
	if exitErr == nil {
		exitErr = endedByRefusal(run)
	}
	if exitErr == nil && run.StructuredErr != nil {
		exitErr = output.WithCode(structuredCode(run.StructuredErr), run.StructuredErr)
	}
	code := output.Code(exitErr)
	res := streamjson.Result{
		Backend:          run.Backend,
		SessionID:        run.SessionID,
		StopReason:       streamjson.StopReason(run.Backend, run.StopReason, run.Agent.TimedOut, run.Interrupted, exitErr != nil),
		Output:           run.Agent.Body(),
		Truncated:        run.Agent.Truncated,
		TimedOut:         run.Agent.TimedOut,
		ExitCode:         code,
		AgentExitCode:    run.Agent.ExitCode,
		DurationMS:       time.Since(run.Started).Milliseconds(),
		Tools:            streamjson.Summaries(run.Agent.Tools),
		Denied:           run.Denied,
		RefusedPaths:     refusedPaths,
		RefusedRequests:  run.Unasked,
		StructuredOutput: run.Structured.Output,
		Attempts:         run.Structured.Attempts,
	}
	if run.Usage != (agent.Usage{}) {
		u := run.Usage
		res.Usage = &u
	}
	if exitErr != nil && code != output.ExitTimeout {
		res.IsError, res.Error = true, exitErr.Error()
	}
	return res, exitErr
}

// endedByRefusal is the run's failure when the agent ended its turn because a tool was refused
// (ACP's stop reason refusal, after a rejection by --deny-tools, --on-permission deny or a
// person): the task is not done, so the run fails (exit 1) naming the tool and how to allow it,
// as a run on the chat backend fails when q stops at a tool it may not use. An agent that carries
// on after a refusal (kiro-cli's chat, other ACP agents) ends well: its refusals are reported only.
func endedByRefusal(run Run) error {
	if run.StopReason != "refusal" || len(run.Denied) == 0 {
		return nil
	}
	var labels, names []string
	for _, t := range run.Agent.Tools {
		if t.Denied {
			labels = append(labels, approval.Label(t))
			names = append(names, approval.TrustName(t))
		}
	}
	if len(labels) == 0 {
		labels = run.Denied
	}
	flags := run.TrustFlags.Or()
	msg := "the agent ended its turn after " + strings.Join(labels, ", ") + " was refused (stop reason: refusal), so it did not finish"
	if len(names) > 0 {
		msg += "; " + agent.TrustHint(run.Trusted, names, flags)
	}
	return output.WithCode(output.ExitFailure, errors.New(msg))
}
