package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

func newQuestionsCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "questions <command>",
		Short: "Answer the questions an assistant asks through ask_user_questions",
		Long: `The human's side of the ask_user_questions MCP tool. When an assistant asks, a question set
waits in qkit's state folder until someone answers or rejects it: in a terminal with
'qkit questions wait', or from a script with 'qkit questions answer'. 'qkit questions ask' poses a
set from a script, the same way the tool does.

With questions.store set to nats, the sets wait in a NATS JetStream bucket instead (the server
questions.nats_url, the bucket qkit-questions-<questions.installation>). A question asked on one
machine is then answered on another. Every command here works the same on either store. A NATS
server that cannot be reached is an error naming it (exit 1); nothing falls back to the files.

Question sets are named by their id (a UUID); any unambiguous prefix works, as in git. Where the id
is optional, the only pending set is meant.`,
		Example: `  # Answer questions in this terminal as they arrive
  qkit questions wait

  # Script: take the next pending set and answer it
  id=$(qkit questions wait --json | jq -r .id)
  qkit questions answer "$id" --answer 1=Go --answer 2=Lint,Docs

  # Ask from a script and read the answers
  qkit questions ask --file questions.json --json`,
		GroupID: groupCore,
	}
	c.AddCommand(newQuestionsListCmd(a), newQuestionsShowCmd(a), newQuestionsWaitCmd(a),
		newQuestionsAnswerCmd(a), newQuestionsRejectCmd(a), newQuestionsAskCmd(a), newQuestionsServeCmd(a))
	return opensQuestionStore(c)
}

// openQuestions opens the questions store the settings choose (questions.store).
func openQuestions(a *app.App) (questions.Store, error) {
	return questionStores().Open(a.Config, questions.Options{Now: a.Now, Logger: a.Logger})
}

// questionsErr maps the core's errors to exit codes. A set that was already answered, rejected or
// closed is a failure (1), not "not found": the set is there, and its status says what became of it.
func questionsErr(err error) error {
	var (
		ve    *questions.ValidationError
		inv   *questions.InvalidIDError
		amb   *questions.AmbiguousError
		clo   *questions.ClosedError
		ended *questions.EndedError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve), errors.As(err, &inv), errors.As(err, &amb):
		return output.WithCode(output.ExitUsage, err)
	case errors.As(err, &clo):
		return output.WithCode(output.ExitFailure, err)
	case errors.Is(err, questions.ErrNotFound), errors.Is(err, questions.ErrClaimed):
		return output.WithCode(output.ExitNotFound, err)
	case errors.As(err, &ended) && ended.Status == questions.TimedOut:
		return output.WithCode(output.ExitTimeout, err)
	}
	return err
}

// withSessionJSON opens the store, resolves the set args names (or the only pending one) and calls
// fn. When the command ends without its usual result (the set is not found, no longer pending,
// taken by another terminal, or the walk was interrupted), --json (asJSON) still prints its object
// (see printEndedJSON) before the error is returned.
func withSessionJSON(a *app.App, args []string, asJSON bool, fn func(questions.Store, *questions.Session) error) error {
	st, err := openQuestions(a)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := resolveSession(st, args)
	if err == nil {
		err = fn(st, s)
	}
	if err != nil && asJSON {
		if jerr := printEndedJSON(a, st, s, err); jerr != nil {
			return jerr
		}
	}
	return err
}

// printEndedJSON prints, for --json, the object of a command that ended with err instead of its
// result, in the shape of show --json: the set as it is now when there is one (its status says why
// it could not be answered), otherwise an empty set whose status says what happened (timed_out,
// not_found, interrupted) and whose reason is the message. Usage errors print nothing: the command
// did not run, and stderr says what to fix.
func printEndedJSON(a *app.App, st questions.Store, s *questions.Session, err error) error {
	var status questions.State
	var closed *questions.ClosedError
	switch output.Code(err) {
	case output.ExitFailure:
		if !errors.As(err, &closed) || s == nil {
			return nil
		}
	case output.ExitNotFound:
		status = "not_found"
	case output.ExitTimeout:
		status = questions.TimedOut
	case output.ExitInterrupted:
		status = "interrupted"
	default:
		return nil
	}
	if s != nil {
		if cur, gerr := st.Get(s.ID); gerr == nil {
			s = cur
		}
		return output.JSON(a.IO.Out, toSessionDetail(a, s))
	}
	return output.JSON(a.IO.Out, noSetJSON(status, err))
}

// noSetJSON is the show --json shape without a set: every key present, id empty, status and reason
// saying why there is no set.
func noSetJSON(status questions.State, err error) sessionDetailJSON {
	return sessionDetailJSON{
		sessionJSON: sessionJSON{Status: status, Reason: err.Error()},
		Questions:   []questions.Question{}, Answers: []questions.AnsweredQuestion{},
	}
}

// resolveSession turns the optional ID argument into a session. Without one, the only open session
// is meant; several are an error that lists them.
func resolveSession(st questions.Store, args []string) (*questions.Session, error) {
	if len(args) == 1 {
		id, err := st.Resolve(args[0])
		if err != nil {
			return nil, questionsErr(err)
		}
		s, err := st.Get(id)
		return s, questionsErr(err)
	}
	all, err := st.List()
	if err != nil {
		return nil, err
	}
	var open []*questions.Session
	for _, s := range all {
		if s.Status.Status.Open() {
			open = append(open, s)
		}
	}
	switch len(open) {
	case 0:
		return nil, output.NotFoundf("no question set is pending")
	case 1:
		return open[0], nil
	}
	ids := make([]string, len(open))
	for i, s := range open {
		ids[i] = s.ShortID()
	}
	return nil, output.UsageErrorf("%d question sets are pending (%s): give an ID", len(open), strings.Join(ids, ", "))
}

// completeSessions completes session ids: open ones only, or all of them.
func completeSessions(a *app.App, all bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if a.Config == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		st, err := openQuestions(a)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer st.Close()
		sessions, _ := st.List()
		var out []string
		for _, s := range sessions {
			if all || s.Status.Status.Open() {
				// The description is shown by the shell: one line, nothing a terminal obeys.
				out = append(out, s.ID+"\t"+termtext.VisibleLine(string(s.Status.Status)+": "+s.Header()))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// sessionJSON is one question set in list --json. Every key is always present (empty string, or
// null for expiresAt without a timeout), so scripts see the same shape whatever the set's state.
type sessionJSON struct {
	ID              string          `json:"id"`
	ShortID         string          `json:"shortId"`
	CallID          string          `json:"callId"`
	Status          questions.State `json:"status"`
	Source          string          `json:"source"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
	ExpiresAt       *time.Time      `json:"expiresAt"`
	AgeSeconds      int64           `json:"ageSeconds"`
	QuestionCount   int             `json:"questionCount"`
	Header          string          `json:"header"`
	RejectionReason string          `json:"rejectionReason"`
	Reason          string          `json:"reason"`
}

// sessionDetailJSON is one question set in show, wait, answer and reject --json: the list fields
// plus the questions and the answers (empty until answered).
type sessionDetailJSON struct {
	sessionJSON
	Questions []questions.Question         `json:"questions"`
	Answers   []questions.AnsweredQuestion `json:"answers"`
}

func toSessionJSON(a *app.App, s *questions.Session) sessionJSON {
	j := sessionJSON{
		ID: s.ID, ShortID: s.ShortID(), CallID: s.Status.CallID, Status: s.Status.Status,
		CreatedAt: s.Status.CreatedAt, UpdatedAt: s.Status.UpdatedAt,
		AgeSeconds: int64(a.Now().Sub(s.Status.CreatedAt).Seconds()), QuestionCount: len(s.Set().Questions),
		Header: s.Header(), RejectionReason: s.Status.RejectionReason, Reason: s.Status.Reason,
		Source: s.Source(), ExpiresAt: s.ExpiresAt(),
	}
	return j
}

func toSessionDetail(a *app.App, s *questions.Session) sessionDetailJSON {
	j := sessionDetailJSON{sessionJSON: toSessionJSON(a, s), Questions: s.Set().Questions, Answers: []questions.AnsweredQuestion{}}
	if j.Questions == nil {
		j.Questions = []questions.Question{}
	}
	if s.Status.Status == questions.Completed && s.Answers != nil {
		j.Answers = questions.ResultOf(s).Answers
	}
	return j
}

// readInput reads the file a flag names, with "-" meaning stdin. A file that does not exist is
// not found (exit 4, as for a missing context path); one that cannot be read is a failure that names
// the flag and the file.
func readInput(a *app.App, flag, name string) ([]byte, error) {
	var r io.Reader = a.IO.In
	if name != "-" {
		f, err := os.Open(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, output.NotFoundf("%s %s: no such file", flag, name)
		case err != nil:
			return nil, fmt.Errorf("%s %s: %w", flag, name, err)
		}
		defer f.Close()
		r = f
	}
	// Read at most maxInput: a file named by mistake (/dev/zero, a log) must not take the memory.
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	if len(data) > maxInput {
		return nil, output.UsageErrorf("%s %s: larger than %d KiB, and no question set or answers file is that large", flag, name, maxInput>>10)
	}
	return data, nil
}

// maxInput bounds a question set or answers file read from a file or stdin. The largest valid
// one (questions.MaxQuestions questions with every text at its limit, each character written as
// a JSON \u escape pair) is about half of it.
const maxInput = 1 << 20
