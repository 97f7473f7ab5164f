package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

type questionsAskOptions struct {
	file, timeout string
	asJSON        bool
}

func newQuestionsAskCmd(a *app.App) *cobra.Command {
	opts := &questionsAskOptions{}
	c := &cobra.Command{
		Use:   "ask",
		Short: "Pose a question set from a script and wait for the answers",
		Long: `Pose a question set, exactly as the ask_user_questions tool does, and block until someone answers
it (qkit questions wait, or qkit questions answer). The set is JSON:

  {"questions":[{"question":"Which language should we use?","header":"Language",
    "options":[{"label":"Go","description":"static binary"},{"label":"TypeScript"}],
    "multiSelect":false}]}

1 to 4 questions, each with 2 to 4 options; free text ("Other") is always allowed. It is read from
--file, or from stdin when stdin is not a terminal. A --file that does not exist exits 4; a set that
does not fit the rules exits 2 and names each field that is wrong.

Prints the answers as the assistant would get them, or with --json as {sessionId, callId, status,
answers:[{questionIndex, header, question, selected, other}], rejectionReason}.

Exits 3 when the set is rejected (the rejection is printed too), 124 when --timeout (default:
questions.timeout) passes, and 130 when interrupted (the set is then marked abandoned). --json
prints the set then too, with status timed_out or abandoned and no answers.`,
		Example: `  qkit questions ask --file questions.json
  qkit questions ask --json --timeout 10m < questions.json | jq -r '.answers[0].selected[0]'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runQuestionsAsk(c.Context(), a, opts) },
	}
	c.Flags().StringVar(&opts.file, "file", "", "read the question set from `F` (- for stdin)")
	c.Flags().StringVar(&opts.timeout, "timeout", "", "give up after `D` (0 = never): exit 124 (default: questions.timeout)")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print {sessionId, callId, status, answers, rejectionReason}")
	return interruptible(c)
}

func runQuestionsAsk(ctx context.Context, a *app.App, opts *questionsAskOptions) error {
	limit := config.QuestionsTimeout.Get(a.Config)
	if opts.timeout != "" {
		d, err := config.ParseDuration(opts.timeout)
		if err != nil {
			return output.UsageErrorf("invalid --timeout %q: %v", opts.timeout, err)
		}
		limit = d
	}
	file := opts.file
	if file == "" {
		if a.IO.StdinTTY {
			return output.UsageErrorf("no question set: pass --file F, or pipe the JSON on stdin (--file -)")
		}
		file = "-"
	}
	data, err := readInput(a, "--file", file)
	if err != nil {
		return err
	}
	set, err := questions.ParseQuestionSet(data)
	if err != nil {
		return output.WithCode(output.ExitUsage, err)
	}
	st, err := openQuestions(a)
	if err != nil {
		return err
	}
	defer st.Close()
	// The session log lines are for servers; a script sees the error itself, so they
	// appear here only when asked for with --log-level info or debug.
	var logger *slog.Logger
	if a.Logger.Enabled(ctx, slog.LevelInfo) {
		logger = a.Logger
	}
	res, sess, err := st.Ask(ctx, set, questions.AskOptions{
		Source: "cli", Timeout: limit, Retention: config.QuestionsRetention.Get(a.Config),
		Logger: logger, CancelReason: "qkit questions ask was interrupted",
		Created: func(s *questions.Session) {
			if a.IO.StderrTTY {
				fmt.Fprintf(a.IO.ErrOut, "Waiting for an answer to question set %s (qkit questions wait, or qkit questions answer %s)…\n", s.ShortID(), s.ShortID())
			}
		},
	})
	if err != nil && opts.asJSON && sess != nil {
		// --json always prints its object: a set that timed out or was abandoned is
		// one with that status and no answers (the message still goes to stderr).
		if jerr := output.JSON(a.IO.Out, endedResult(sess, err)); jerr != nil {
			return jerr
		}
	}
	if errors.Is(err, context.Canceled) && sess != nil {
		return output.WithCode(output.ExitInterrupted, fmt.Errorf("interrupted: question set %s marked abandoned", sess.ID))
	}
	if err != nil {
		return questionsErr(err)
	}
	if opts.asJSON {
		err = output.JSON(a.IO.Out, res)
	} else {
		// The labels and free text come from the set and whoever answered it.
		_, err = fmt.Fprintln(a.IO.Out, termtext.Visible(res.Text()))
	}
	if err != nil {
		return err
	}
	if res.Status == questions.Rejected {
		return output.Errorf(output.ExitRejected, "question set %s was rejected", res.SessionID)
	}
	return nil
}

// endedResult is the result of a set that ended without answers: timed out, or abandoned when
// the wait was interrupted.
func endedResult(sess *questions.Session, err error) *questions.Result {
	status := questions.Abandoned
	var ended *questions.EndedError
	if errors.As(err, &ended) {
		status = ended.Status
	}
	return &questions.Result{SessionID: sess.ID, CallID: sess.Status.CallID, Status: status, Answers: []questions.AnsweredQuestion{}}
}
