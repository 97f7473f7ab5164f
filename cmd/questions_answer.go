package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/prompt"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

type questionsListOptions struct{ all, asJSON bool }

func newQuestionsListCmd(a *app.App) *cobra.Command {
	opts := &questionsListOptions{}
	c := &cobra.Command{
		Use:   "list",
		Short: "List pending question sets",
		Long: `List the question sets waiting for an answer, oldest first: short id, age, status, number of
questions and the first question's header. --all adds answered, rejected, timed-out and abandoned
sets (kept for questions.retention).

A set whose MCP call ended before the answer (the client gave up, cancelled, or its server stopped)
is listed as detached. It can still be answered, and the assistant's repeated call with the same
questions collects the answer. A set asked by 'qkit questions ask' whose process has exited is
marked abandoned here, never silently deleted.

--json prints [{id, shortId, callId, status, source, createdAt, updatedAt, expiresAt, ageSeconds,
questionCount, header, rejectionReason, reason}].`,
		Example: `  qkit questions list
  qkit questions list --all
  qkit questions list --json | jq -r '.[0].id'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runQuestionsList(a, opts) },
	}
	c.Flags().BoolVar(&opts.all, "all", false, "include answered, rejected, timed-out and abandoned sets")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON (fields above)")
	return tableOnTTY(exposeRead(c))
}

func runQuestionsList(a *app.App, opts *questionsListOptions) error {
	st, err := openQuestions(a)
	if err != nil {
		return err
	}
	defer st.Close()
	sessions, err := st.List()
	if err != nil {
		return err
	}
	rows := [][]string{}
	out := []sessionJSON{}
	for _, s := range sessions {
		if !opts.all && !s.Status.Status.Open() {
			continue
		}
		out = append(out, toSessionJSON(a, s))
		rows = append(rows, questions.ListRow(s, a.Now()))
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, out)
	}
	if len(rows) == 0 && a.IO.StdoutTTY {
		fmt.Fprintln(a.IO.ErrOut, "No question set is pending.")
		return nil
	}
	return printTable(a.IO.Out, a.IO.StdoutTTY, []string{"id", "age", "status", "questions", "header"}, rows)
}

type questionsShowOptions struct{ asJSON bool }

func newQuestionsShowCmd(a *app.App) *cobra.Command {
	opts := &questionsShowOptions{}
	c := &cobra.Command{
		Use:   "show [ID]",
		Short: "Show one question set in full, with its answers",
		Long: `Show a question set: status, who asked and when, every question with its options, and the
answers or the rejection reason once there are any. ID may be any unambiguous prefix; without it,
the only pending set is shown.`,
		Example: `  qkit questions show 1a2b3c4d
  qkit questions show --json | jq '.questions[].header'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeSessions(a, true),
		RunE:              func(_ *cobra.Command, args []string) error { return runQuestionsShow(a, opts, args) },
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: list --json's fields, questions and answers")
	return exposeRead(c)
}

func runQuestionsShow(a *app.App, opts *questionsShowOptions, args []string) error {
	return withSessionJSON(a, args, opts.asJSON, func(_ questions.Store, s *questions.Session) error {
		if opts.asJSON {
			return output.JSON(a.IO.Out, toSessionDetail(a, s))
		}
		questions.PrintSession(a.IO.Out, s, a.Now())
		return nil
	})
}

type answerOptions struct {
	answers, others []string
	file            string
	asJSON          bool
}

func newQuestionsAnswerCmd(a *app.App) *cobra.Command {
	opts := &answerOptions{}
	c := &cobra.Command{
		Use:   "answer [ID]",
		Short: "Answer a pending question set",
		Long: `Answer a pending question set from a script, or interactively on a terminal when no answers are
given. On a terminal, a line on stderr confirms the answer was sent; piped, nothing is printed.

In --answer N=LABEL, N is the question's number (from 1) or its header, and LABEL is an option's
label or its number (from 1, as 'qkit questions show' numbers the options). Labels are matched
exactly, then ignoring case; a label that is itself a number (a set asking "How many?" with labels
1, 2, 3) matches as a label first. A label that holds a comma may be given whole, or with the comma
written \,. A multiple-choice question takes several, comma-separated (2=Lint,Docs or 2=1,2), or
none (N=). --other gives free text instead of (or, for multiple choice, as well as) a label.

--answers-file reads {"answers":[{"questionIndex":0,"selected":["Go"],"other":"..."}]}
(questionIndex from 0, as in the JSON of show and wait; labels only, no numbers).

An unknown label says which labels and numbers are accepted; several on a single-choice question, a
question out of range or a missing answer exit 2. No such set, or no pending set when ID is left
out, exits 4; a set that was already answered, rejected, timed out or abandoned exits 1 and says
which. A file for --answers-file that does not exist exits 4. With --json the set is printed then
too, as it is now; when there is no such set, status is not_found and the id empty.`,
		Example: `  qkit questions answer 1a2b --answer 1=Go --answer Extras=Lint,Docs
  qkit questions answer 1a2b --answer 1=2 --answer 2=1,2   # by option number
  qkit questions answer 1a2b --answer 1=Go --other 2="nightly CI only"
  echo '{"answers":[{"questionIndex":0,"selected":["Go"]}]}' |
    qkit questions answer 1a2b --answers-file -
  qkit questions answer            # the only pending set, interactively`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeSessions(a, false),
		RunE: func(c *cobra.Command, args []string) error {
			return runQuestionsAnswer(c.Context(), a, opts, args)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&opts.answers, "answer", nil, "answer question `N=LABEL[,LABEL...]` (N, LABEL: above; repeatable)")
	f.StringArrayVar(&opts.others, "other", nil, "free-text answer `N=TEXT` for question N (repeatable)")
	f.StringVar(&opts.file, "answers-file", "", "read the answers as JSON from `FILE` (- for stdin)")
	f.BoolVar(&opts.asJSON, "json", false, "print the answered set as JSON (as show --json)")
	_ = c.RegisterFlagCompletionFunc("answer", completeAnswerSpecs(a, false))
	_ = c.RegisterFlagCompletionFunc("other", completeAnswerSpecs(a, true))
	c.MarkFlagsMutuallyExclusive("answers-file", "answer")
	c.MarkFlagsMutuallyExclusive("answers-file", "other")
	return interruptible(c)
}

func runQuestionsAnswer(ctx context.Context, a *app.App, opts *answerOptions, args []string) error {
	return withSessionJSON(a, args, opts.asJSON, func(st questions.Store, s *questions.Session) error {
		return answerSession(ctx, a, opts, st, s)
	})
}

func answerSession(ctx context.Context, a *app.App, opts *answerOptions, st questions.Store, s *questions.Session) error {
	if !s.Status.Status.Open() {
		return questionsErr(&questions.ClosedError{ID: s.ID, Status: s.Status.Status, Reason: s.Status.Reason})
	}
	var answers []questions.Answer
	switch {
	case opts.file != "":
		data, err := readInput(a, "--answers-file", opts.file)
		if err != nil {
			return err
		}
		if answers, err = questions.ParseAnswersFile(data); err != nil {
			return output.WithCode(output.ExitUsage, err)
		}
	case len(opts.answers) > 0 || len(opts.others) > 0:
		var err error
		if answers, err = questions.AnswersFromSpecs(s.Set(), opts.answers, opts.others); err != nil {
			return output.WithCode(output.ExitUsage, err)
		}
	default:
		p, err := a.Prompt("--answer")
		if err != nil {
			return err
		}
		return answerInteractively(ctx, a, st, p, s, opts.asJSON)
	}
	done, err := st.Answer(s.ID, answers, "")
	if err != nil {
		return questionsErr(err)
	}
	return reportDone(a, done, opts.asJSON)
}

func reportDone(a *app.App, s *questions.Session, asJSON bool) error {
	if asJSON {
		return output.JSON(a.IO.Out, toSessionDetail(a, s))
	}
	if a.IO.StderrTTY {
		verb := "Answers sent"
		if s.Status.Status == questions.Rejected {
			verb = "Rejected"
		}
		fmt.Fprintf(a.IO.ErrOut, "✓ %s: question set %s\n", verb, s.ShortID())
	}
	return nil
}

// answerInteractively claims the session, walks the person through it and submits their decision.
// Ctrl-C hands the session back as pending.
func answerInteractively(ctx context.Context, a *app.App, st questions.Store, p prompt.Prompter, s *questions.Session, asJSON bool) error {
	token, s, err := st.Claim(s.ID)
	if err != nil {
		return questionsErr(err)
	}
	d, err := questions.Walk(ctx, p, a.IO.Out, s)
	if err != nil {
		_ = st.Release(s.ID, token)
		if errors.Is(err, prompt.ErrInterrupted) {
			return output.WithCode(output.ExitInterrupted, fmt.Errorf("question set %s left pending", s.ShortID()))
		}
		return err
	}
	var done *questions.Session
	if d.Rejected {
		done, err = st.Reject(s.ID, d.Reason, token)
	} else {
		done, err = st.Answer(s.ID, d.Answers, token)
	}
	if err != nil {
		_ = st.Release(s.ID, token)
		var closed *questions.ClosedError
		if errors.As(err, &closed) {
			// The first answer counts: the assistant's form, the page or a script was first.
			// The person is told, rather than finding out from the assistant.
			fmt.Fprintln(a.IO.ErrOut, endedElsewhere(s.ShortID(), closed.Status))
		}
		return questionsErr(err)
	}
	return reportDone(a, done, asJSON)
}

// endedElsewhere tells the person at a terminal that the set they walked through ended another way
// before they submitted.
func endedElsewhere(id string, st questions.State) string {
	switch st {
	case questions.Completed:
		return fmt.Sprintf("✗ Question set %s was answered elsewhere first; your answers were not sent.", id)
	case questions.Rejected:
		return fmt.Sprintf("✗ Question set %s was rejected elsewhere first; your answers were not sent.", id)
	}
	return fmt.Sprintf("✗ Question set %s ended first (%s); your answers were not sent.", id, st)
}

type questionsRejectOptions struct {
	reason string
	asJSON bool
}

func newQuestionsRejectCmd(a *app.App) *cobra.Command {
	opts := &questionsRejectOptions{}
	c := &cobra.Command{
		Use:   "reject [ID]",
		Short: "Reject a pending question set",
		Long: `Reject a pending question set. The assistant is told the user rejected it, with the reason when
one is given. On a terminal, a line on stderr confirms it; piped, nothing is printed. No such set
exits 4; a set that was already answered, rejected, timed out or abandoned exits 1 and says which.`,
		Example: `  qkit questions reject 1a2b
  qkit questions reject 1a2b --reason "Ask me after the release"`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeSessions(a, false),
		RunE:              func(_ *cobra.Command, args []string) error { return runQuestionsReject(a, opts, args) },
	}
	c.Flags().StringVar(&opts.reason, "reason", "", "tell the assistant why, as `TEXT`")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print the rejected set as JSON (as show --json)")
	return interruptible(c)
}

func runQuestionsReject(a *app.App, opts *questionsRejectOptions, args []string) error {
	return withSessionJSON(a, args, opts.asJSON, func(st questions.Store, s *questions.Session) error {
		done, err := st.Reject(s.ID, opts.reason, "")
		if err != nil {
			return questionsErr(err)
		}
		return reportDone(a, done, opts.asJSON)
	})
}

// completeAnswerSpecs completes --answer with N=LABEL for every option of the set named by the
// argument (or the only pending one), and --other with N= for every question.
func completeAnswerSpecs(a *app.App, other bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if a.Config == nil {
			return nil, none
		}
		st, err := openQuestions(a)
		if err != nil {
			return nil, none
		}
		defer st.Close()
		s, err := resolveSession(st, args)
		if err != nil {
			return nil, none
		}
		var out []string
		for i, q := range s.Set().Questions {
			if other {
				out = append(out, fmt.Sprintf("%d=\t%s", i+1, termtext.VisibleLine(q.Header+": "+q.Question)))
				continue
			}
			for j, o := range q.Options {
				desc := q.Header
				if o.Description != "" {
					desc += ": " + o.Description
				}
				// The label is what the shell inserts, so it stays as stored; a label a terminal
				// would act on is offered by its number instead.
				value := o.Label
				if termtext.VisibleLine(value) != value {
					value = fmt.Sprint(j + 1)
					desc = termtext.VisibleLine(o.Label) + ": " + desc
				}
				out = append(out, fmt.Sprintf("%d=%s\t%s", i+1, value, termtext.VisibleLine(desc)))
			}
		}
		if other {
			return out, none | cobra.ShellCompDirectiveNoSpace // the text comes next
		}
		return out, none
	}
}
