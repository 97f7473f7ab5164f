package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
)

// waitOptions are the flags of `qkit questions wait`.
type waitOptions struct {
	once    bool
	timeout string // --timeout as given; runQuestionsWait parses it
	asJSON  bool
}

func newQuestionsWaitCmd(a *app.App) *cobra.Command {
	opts := &waitOptions{}
	c := &cobra.Command{
		Use:   "wait",
		Short: "Wait for a question set and answer it (interactive on a terminal)",
		Long: `Block until a question set is pending.

On a terminal, walk through it: single choice, multiple choice, free text through "Other", a
review before submitting, or rejecting the set with an optional reason. Then wait for the next one,
unless --once. Two terminals never both answer one set: the first to take it holds it until it is
answered, or handed back with Ctrl-C. The first answer counts whichever way it comes: when the
assistant's form, the page or a script answers the set first, submitting says so, and the answers
typed here are not sent.

Piped, or with --json, print the oldest pending set as JSON (as show --json) and exit 0, so a script
can answer it with 'qkit questions answer'. With --timeout, exit 124 when no set arrives in time;
exit 130 when interrupted. The JSON is printed then too, with the same keys: an empty id, status
timed_out or interrupted, and the message as the reason.`,
		Example: `  qkit questions wait
  qkit questions wait --once --timeout 10m
  id=$(qkit questions wait --json --timeout 1h | jq -r .id)`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runQuestionsWait(c.Context(), a, opts) },
	}
	c.Flags().BoolVar(&opts.once, "once", false, "answer one question set, then exit")
	c.Flags().StringVar(&opts.timeout, "timeout", "", "give up after `D` (90s, 10m, 1h) without a pending set: exit 124")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print the pending set as JSON and exit (as show --json)")
	return interruptible(c)
}

// runQuestionsWait is `qkit questions wait`: the oldest pending set as JSON, or on a terminal each
// set answered in turn.
func runQuestionsWait(ctx context.Context, a *app.App, opts *waitOptions) error {
	var timeout time.Duration
	if opts.timeout != "" {
		d, err := config.ParseDuration(opts.timeout)
		if err != nil {
			return output.UsageErrorf("invalid --timeout %q: %v", opts.timeout, err)
		}
		timeout = d
	}
	st, err := openQuestions(a)
	if err != nil {
		return err
	}
	defer st.Close()
	interactive := !opts.asJSON && a.IO.CanPrompt()
	if !interactive {
		s, err := waitPending(ctx, a, st, timeout, false)
		if err != nil {
			// Scripts read stdout: the timeout or interruption is an object there too.
			if jerr := printEndedJSON(a, st, nil, err); jerr != nil {
				return jerr
			}
			return err
		}
		return output.JSON(a.IO.Out, toSessionDetail(a, s))
	}
	p, err := a.Prompt("--json")
	if err != nil {
		return err
	}
	for {
		s, err := waitPending(ctx, a, st, timeout, true)
		if err != nil {
			return err
		}
		if n := waitingAfter(st, s.ID); n > 0 {
			fmt.Fprintf(a.IO.Out, "\n%s waiting after this one.\n", plural(n, "more question set is", "more question sets are"))
		}
		err = answerInteractively(ctx, a, st, p, s, false)
		var closed *questions.ClosedError
		switch {
		case errors.Is(err, questions.ErrClaimed), errors.As(err, &closed), output.Code(err) == output.ExitNotFound:
			continue // another terminal took it, or it ended (or went) meanwhile
		case err != nil:
			return err
		}
		if opts.once {
			return nil
		}
	}
}

func waitPending(ctx context.Context, a *app.App, st questions.Store, timeout time.Duration, say bool) (*questions.Session, error) {
	if say && a.IO.StderrTTY {
		fmt.Fprintln(a.IO.ErrOut, "Waiting for questions… (Ctrl-C to stop)")
	}
	s, err := st.WaitPending(ctx, questions.WaitPendingOptions{Timeout: timeout})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, output.Errorf(output.ExitTimeout, "no question set arrived within %s", timeout)
	}
	if errors.Is(err, context.Canceled) {
		return nil, output.Errorf(output.ExitInterrupted, "interrupted while waiting for a question set")
	}
	return s, err
}

// waitingAfter counts the other sets wait offers (pending or detached), so the person knows how
// many are queued.
func waitingAfter(st questions.Store, id string) int {
	all, err := st.List()
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range all {
		if s.ID != id && s.Offered() {
			n++
		}
	}
	return n
}
