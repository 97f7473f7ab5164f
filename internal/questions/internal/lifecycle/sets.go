package lifecycle

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/questions"
)

// WaitClocks are the channels of a Wait's deadline (opts.Timeout) and progress reports
// (opts.ProgressEvery, 10 s by default), each nil when not asked for; stop releases them. Both
// stores' Wait use them.
func WaitClocks(opts questions.WaitOptions) (deadline, progress <-chan time.Time, stop func()) {
	var timer *time.Timer
	var ticker *time.Ticker
	if opts.Timeout > 0 {
		timer = time.NewTimer(opts.Timeout)
		deadline = timer.C
	}
	if opts.Progress != nil {
		every := opts.ProgressEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		ticker = time.NewTicker(every)
		progress = ticker.C
	}
	return deadline, progress, func() {
		if timer != nil {
			timer.Stop()
		}
		if ticker != nil {
			ticker.Stop()
		}
	}
}

// EndCancelledWait ends set id of st after its waiter's caller went away: abandoned, or detached
// (answerable by a repeated call) with opts.Detach, with opts.CancelReason. Both stores' Wait use
// it.
func EndCancelledWait(st questions.Store, logger *slog.Logger, id string, opts questions.WaitOptions) {
	reason := opts.CancelReason
	if reason == "" {
		reason = "the caller cancelled the wait"
	}
	end, what := st.Abandon, "abandoned"
	if opts.Detach {
		end, what = st.Detach, "detached"
	}
	if _, err := end(id, reason); err != nil {
		logger.Warn("could not mark question set "+what, "sessionId", id, "error", err)
	}
}

// FillStatus completes a set's status as both stores read it: its id, and from its request the
// call id, the number of questions and the time it was asked (created when neither says).
func FillStatus(sess *questions.Session, id string, created time.Time) {
	sess.Status.SessionID = id
	if sess.Request != nil {
		sess.Status.CallID = sess.Request.CallID
		sess.Status.TotalQuestions = len(sess.Request.Questions)
		if sess.Status.CreatedAt.IsZero() {
			sess.Status.CreatedAt = sess.Request.CreatedAt
		}
	}
	if sess.Status.CreatedAt.IsZero() {
		sess.Status.CreatedAt = created
	}
}

func ValidPrefix(p string) bool {
	if p == "" || len(p) > 36 {
		return false
	}
	for _, r := range p {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '-') {
			return false
		}
	}
	return true
}

// NewSession is a new pending session with a fresh id (and call id unless given), owned by this process.
func NewSession(now func() time.Time, set *questions.QuestionSet, opts questions.CreateOptions) *questions.Session {
	id := uuid.NewString()
	callID := opts.CallID
	if callID == "" {
		callID = uuid.NewString()
	}
	t := now().UTC()
	req := &questions.Request{SessionID: id, CallID: callID, CreatedAt: t, Source: opts.Source, Owner: questions.Self(), Detachable: opts.Detachable, Questions: set.Questions}
	if opts.Timeout > 0 {
		exp := t.Add(opts.Timeout)
		req.ExpiresAt = &exp
	}
	st := questions.Status{SessionID: id, CallID: callID, Status: questions.Pending, CreatedAt: t, UpdatedAt: t, TotalQuestions: len(set.Questions)}
	return &questions.Session{ID: id, Request: req, Status: st}
}

// MatchPrefix finds the one id that is p or starts with p (prefix is what the user typed).
func MatchPrefix(prefix, p string, ids []string) (string, error) {
	var match []string
	for _, id := range ids {
		if id == p {
			return id, nil
		}
		if strings.HasPrefix(id, p) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("question set %q: %w", prefix, questions.ErrNotFound)
	case 1:
		return match[0], nil
	}
	return "", &questions.AmbiguousError{Prefix: prefix, IDs: match}
}

func KnownState(s questions.State) bool {
	switch s {
	case questions.Pending, questions.Detached, questions.InProgress, questions.Completed, questions.Rejected, questions.TimedOut, questions.Abandoned:
		return true
	}
	return false
}

func RoundTrip(qs []questions.Question) any {
	data, _ := json.Marshal(map[string]any{"questions": qs})
	var v any
	_ = json.Unmarshal(data, &v)
	return v
}

// CheckStored checks answers read from a store against the set's questions (sess.Request must be
// read): another tool sharing the store may have written answers no door would accept. Every store
// runs it when it reads a set, so none hands out such answers as the set's.
func CheckStored(sess *questions.Session, ans *questions.Answers) error {
	_, err := questions.CheckAnswers(sess.Set(), ans.Answers)
	return err
}

// Outcome reports whether a wait on sess is over: answered or rejected (done, no error), or ended
// without an answer (an *EndedError).
func Outcome(sess *questions.Session) (bool, error) {
	switch sess.Status.Status {
	case questions.Completed, questions.Rejected:
		return true, nil
	case questions.TimedOut, questions.Abandoned:
		return true, &questions.EndedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason}
	}
	return false, nil
}

// Offers says whether a wait for a pending set offers sess: offered to a person, and not skipped.
func Offers(o questions.WaitPendingOptions, sess *questions.Session) bool {
	return sess.Offered() && (o.Skip == nil || !o.Skip(sess.ID))
}

// SortSessions orders sets oldest first (by id among equals); session gives each one's session (a
// store reads its sets with what only it knows of them).
func SortSessions[T any](out []T, session func(T) *questions.Session) {
	sort.SliceStable(out, func(i, j int) bool {
		x, y := session(out[i]), session(out[j])
		a, b := x.Status.CreatedAt, y.Status.CreatedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return x.ID < y.ID
	})
}

// LastChange is when a set last changed, for the retention rule.
func LastChange(sess *questions.Session) time.Time {
	last := sess.Status.UpdatedAt
	if last.IsZero() || sess.Status.CreatedAt.After(last) {
		last = sess.Status.CreatedAt
	}
	return last
}
