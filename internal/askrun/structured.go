package askrun

// Structured answers and budgets: Execute sends the prompt through structured.Ask,
// whose Send runs one prompt on the chosen backend (ACP: the same session; chat: --resume from
// the second on), so ask, the MCP tool and acp serve get the retries and budgets from here.

import (
	"context"
	"errors"
	"sync"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// Structured makes a run structured, bounded, or both.
type Structured struct {
	// Schema, when set: the instruction and the schema go with the prompt, the reply must hold
	// JSON valid against it, and a reply that does not is answered with its errors Retries times.
	Schema  *structured.Schema
	Retries int
	// MaxTurns bounds the prompts sent (retries included), MaxCredits the credits the agent
	// reports over the run (ACP only); zero is no bound.
	MaxTurns   int
	MaxCredits float64
	// OnAttempt is told of each answer checked against Schema, as soon as it is.
	OnAttempt func(structured.Attempt)
}

// sendFunc runs one prompt on the backend: attempt counts from 1; from the second on it goes to
// the session of the first. It records what the attempt left in the Run.
type sendFunc func(ctx context.Context, prompt string, attempt int) (reply string, err error)

// meter counts the credits of a run against its budget and stops the attempt that passes it.
type meter struct {
	budget *structured.Budget

	mu    sync.Mutex
	stop  context.CancelFunc // the current attempt's
	live  float64            // credits the current attempt's events reported
	total agent.Usage        // usage summed over the attempts
}

// event counts a usage event's credits; past the budget it stops the attempt.
func (m *meter) event(ev agent.Event) {
	if ev.Type != agent.EventUsage || ev.Usage == nil {
		return
	}
	m.mu.Lock()
	m.live += ev.Usage.Credits
	stop := m.stop
	m.mu.Unlock()
	if m.budget.AddCredits(ev.Usage.Credits) != nil && stop != nil {
		stop()
	}
}

// attemptUsage sums an attempt's usage into the run's and counts the credits its events did not
// carry (kiro's subagents report under their own sessions); it returns the run's usage so far.
func (m *meter) attemptUsage(u agent.Usage) agent.Usage {
	m.mu.Lock()
	rest := u.Credits - m.live
	m.live = 0
	m.total.Add(u)
	total := m.total
	m.mu.Unlock()
	if rest > 0 {
		_ = m.budget.AddCredits(rest)
	}
	return total
}

// newMeter is the run's meter; o.OnEvent is wrapped so that it sees the usage events first.
func (o *Options) newMeter() *meter {
	m := &meter{}
	if s := o.Structured; s != nil {
		m.budget = &structured.Budget{MaxTurns: s.MaxTurns, MaxCredits: s.MaxCredits}
	}
	if m.budget != nil && m.budget.MaxCredits > 0 {
		next := o.OnEvent
		o.OnEvent = func(ev agent.Event) {
			m.event(ev)
			if next != nil {
				next(ev)
			}
		}
	}
	return m
}

// ask sends the request's prompt through send: once, or with o.Structured's schema until an
// answer is valid, within its budget. What structured itself ends the run with (no valid answer,
// the budget) goes in run.StructuredErr; send's own error is run.Err already.
func (o *Options) ask(ctx context.Context, m *meter, run *Run, send sendFunc) {
	so := structured.Options{Budget: m.budget}
	if s := o.Structured; s != nil {
		so.Schema, so.Retries, so.OnAttempt = s.Schema, s.Retries, s.OnAttempt
	}
	res, err := structured.Ask(ctx, o.Request.Prompt, func(ctx context.Context, p string, n int) (string, error) {
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		m.mu.Lock()
		m.stop, m.live = cancel, 0
		m.mu.Unlock()
		reply, err := send(actx, p, n)
		if err == nil && run.Agent.TimedOut {
			err = errTimedOut // not an answer to check or retry: the run ends as timed out (Outcome)
		}
		return reply, err
	}, so)
	run.Structured = res
	var be *structured.BudgetError
	var nv *structured.NoValidAnswerError
	switch {
	case errors.As(err, &be):
		run.Err, run.StructuredErr = nil, err // the turn was stopped for the budget: not the agent's failure
	case errors.As(err, &nv):
		run.StructuredErr = err
	}
}

// errTimedOut stops structured.Ask after an attempt that hit the timeout, which is no error of
// the agent's (run.Err stays nil; Report says the run timed out).
var errTimedOut = errors.New("the agent timed out")

// checkBudgetBackend refuses, before anything runs, a credit budget qkit could not enforce: only
// kiro-cli (and q where it runs kiro-cli) reports credits, and only on the acp backend. Another
// ACP agent reports none, or a cost in money that cannot be compared with credits; its run would
// go on unbounded, so the budget is refused rather than silently taken.
func (o *Options) checkBudgetBackend(backend string) error {
	s := o.Structured
	if s == nil || s.MaxCredits <= 0 {
		return nil
	}
	if backend != acpclient.BackendACP {
		return output.UsageErrorf("--max-credits needs the acp backend: the chat backend reports no credits (use --backend acp with kiro-cli)")
	}
	if d := agent.Describe(o.Limits.Command); !d.Builtin() {
		return output.UsageErrorf("--max-credits needs an agent that reports credits (kiro-cli does): %s is not known to, so the budget could not be kept; "+
			"bound the run with --max-turns or --timeout instead", termtext.VisibleLine(d.Name()))
	}
	return nil
}

// structuredCode is the exit code of what structured ended a run with: 6 for the budget, else 5.
func structuredCode(err error) int {
	var be *structured.BudgetError
	if errors.As(err, &be) {
		return output.ExitBudget
	}
	return output.ExitInvalid
}
