package structured

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// Send sends one prompt to the agent and returns its reply. attempt counts from 1; from the
// second on, the prompt must go to the same session as the first (the ACP backend prompts the
// first attempt's session again over the same connection; chat runs with --resume), since a
// retry refers to the earlier answer. A Send that hits the Budget (Budget.AddCredits) stops its turn and returns
// what arrived.
type Send func(ctx context.Context, prompt string, attempt int) (reply string, err error)

// Attempt is one answer and what was wrong with it: the per-attempt event of stream-json.
type Attempt struct {
	Attempt  int      `json:"attempt"`
	Valid    bool     `json:"valid"`
	Problems []string `json:"errors,omitempty"`
}

// Options are a structured run's settings.
type Options struct {
	// Schema, when set, makes the run structured: the instruction goes with the prompt and the
	// reply must hold JSON valid against it. Without it, Ask sends the prompt once (budgets
	// still apply).
	Schema *Schema
	// Retries is how many times the agent is asked again after an answer that is not valid.
	Retries int
	// Budget bounds the run; nil is no bound.
	Budget *Budget
	// OnAttempt is told of each answer checked, as soon as it is.
	OnAttempt func(Attempt)
}

// DefaultRetries is --schema-retries' default.
const DefaultRetries = 2

// Result is what a structured run produced.
type Result struct {
	// Output is the validated JSON (compact as the agent wrote it, blanks trimmed); nil when
	// there is none.
	Output json.RawMessage
	// Reply is the last reply, as the agent gave it.
	Reply    string
	Attempts []Attempt
}

// NoValidAnswerError is a structured run whose every answer was invalid: Problems are the last
// answer's.
type NoValidAnswerError struct {
	Attempts int
	Problems []string
}

func (e *NoValidAnswerError) Error() string {
	tries := "1 answer"
	if e.Attempts != 1 {
		tries = strconv.Itoa(e.Attempts) + " answers"
	}
	return fmt.Sprintf("no valid JSON after %s (--schema-retries): the last one: %s", tries, joinProblems(e.Problems))
}

// Ask sends prompt (with the schema's instruction) through send, checks each reply, and asks
// again in the same session with the problems found, up to o.Retries times. The errors: send's
// own (returned as is, so the front end maps it as for any run), a *BudgetError when the budget
// was hit (before a prompt that would pass MaxTurns, or when the credits passed MaxCredits), a
// *NoValidAnswerError when no answer was valid. The Result holds the last reply in every case.
func Ask(ctx context.Context, prompt string, send Send, o Options) (Result, error) {
	var res Result
	p := prompt
	if o.Schema != nil {
		p = o.Schema.Prompt(prompt)
	}
	for n := 1; ; n++ {
		if err := o.Budget.startTurn(); err != nil {
			return res, err
		}
		reply, err := send(ctx, p, n)
		res.Reply = reply
		if berr := o.Budget.Err(); berr != nil {
			return res, berr // the turn was stopped for it: send's error is only the consequence
		}
		if err != nil {
			return res, err
		}
		if o.Schema == nil {
			return res, nil
		}
		doc, err := Extract(reply)
		if err == nil {
			err = o.Schema.Validate(doc)
		}
		a := Attempt{Attempt: n, Valid: err == nil}
		if err != nil {
			a.Problems = Problems(err)
		}
		res.Attempts = append(res.Attempts, a)
		if o.OnAttempt != nil {
			o.OnAttempt(a)
		}
		if err == nil {
			res.Output = doc
			return res, nil
		}
		if n > o.Retries {
			return res, &NoValidAnswerError{Attempts: n, Problems: a.Problems}
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		p = RetryPrompt(a.Problems)
	}
}

// Budget bounds a run: MaxTurns prompts (retries included) and MaxCredits credits (kiro's, summed
// over every prompt and subagent of the run); zero is no bound. Its methods are safe for
// concurrent use (credits arrive with the agent's events) and a nil Budget bounds nothing.
type Budget struct {
	MaxTurns   int
	MaxCredits float64

	mu       sync.Mutex
	turns    int
	credits  float64
	exceeded *BudgetError
}

// BudgetError is a run stopped by its budget.
type BudgetError struct {
	Kind  string  // "turns" or "credits"
	Limit float64 // the bound
	Used  float64 // what was used when it was hit
}

func (e *BudgetError) Error() string {
	if e.Kind == "turns" {
		return fmt.Sprintf("budget exceeded: --max-turns %g allows %g prompts, and another was needed; what arrived was kept", e.Limit, e.Limit)
	}
	return fmt.Sprintf("budget exceeded: the agent reported %s credits, over --max-credits %s; the turn was stopped and what arrived was kept",
		strconv.FormatFloat(e.Used, 'f', -1, 64), strconv.FormatFloat(e.Limit, 'f', -1, 64))
}

// startTurn counts a prompt about to be sent; an error means it must not be.
func (b *Budget) startTurn() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exceeded != nil {
		return b.exceeded
	}
	if b.MaxTurns > 0 && b.turns >= b.MaxTurns {
		b.exceeded = &BudgetError{Kind: "turns", Limit: float64(b.MaxTurns), Used: float64(b.turns)}
		return b.exceeded
	}
	b.turns++
	return nil
}

// AddCredits counts credits the agent reported; an error means the run passed MaxCredits and
// its turn must be stopped.
func (b *Budget) AddCredits(c float64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.credits += c
	if b.exceeded == nil && b.MaxCredits > 0 && b.credits > b.MaxCredits {
		b.exceeded = &BudgetError{Kind: "credits", Limit: b.MaxCredits, Used: b.credits}
	}
	if b.exceeded != nil && b.exceeded.Kind == "credits" {
		return b.exceeded
	}
	return nil
}

// Err is the budget's error once it was hit.
func (b *Budget) Err() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exceeded == nil {
		return nil
	}
	return b.exceeded
}

// Used is what the run used so far: prompts sent and credits reported.
func (b *Budget) Used() (turns int, credits float64) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.turns, b.credits
}
