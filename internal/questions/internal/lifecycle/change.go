package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/questions"
)

// openCheck refuses a change to a session that is closed or claimed by another live terminal.
func openCheck(sess *questions.Session, claim string, now time.Time) error {
	if !sess.Status.Status.Open() {
		return &questions.ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason}
	}
	if sess.Request == nil {
		return &questions.ClosedError{ID: sess.ID, Status: questions.Abandoned, Reason: sess.Problem}
	}
	if c := sess.Status.Claim; c != nil && claim != "" && c.Token != claim && !ClaimLapsed(c, now) {
		return fmt.Errorf("question set %s %w (pid %d)", sess.ID, questions.ErrClaimed, c.By.PID)
	}
	return nil
}

// Change decides one step of a session's life on its current state: it returns whether to write the
// status (and the answers, when non-nil). Every store runs a change under its own guard against a
// concurrent writer (the file store's lock, the NATS store's revision check), so a change always sees
// the state it replaces, and exactly one of several racing changes wins.
type Change func(sess *questions.Session) (answers *questions.Answers, write bool, err error)

func AnswerChange(now func() time.Time, answers []questions.Answer, claim string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if err := openCheck(sess, claim, now()); err != nil {
			return nil, false, err
		}
		checked, err := questions.CheckAnswers(sess.Set(), answers)
		if err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim = questions.Completed, nil
		return &questions.Answers{SessionID: sess.ID, CallID: sess.Status.CallID, AnsweredAt: now().UTC(), Answers: checked}, true, nil
	}
}

// CheckReason trims a rejection reason and refuses one that is not UTF-8 text or is too long. Every
// door (the commands, the web page, the MCP tool's form, approvals) rejects through here, so each
// refuses the same reasons with the same message; a reason that is not UTF-8 would otherwise be
// stored with replacement characters by the JSON encoder.
func CheckReason(reason string) (string, error) {
	if !utf8.ValidString(reason) {
		return "", &questions.ValidationError{Problems: []questions.FieldError{
			{Field: "reason", Msg: "must be valid UTF-8 text"},
		}}
	}
	reason = strings.TrimSpace(reason)
	if n := len([]rune(reason)); n > questions.MaxReasonLen {
		return "", &questions.ValidationError{Problems: []questions.FieldError{
			{Field: "reason", Msg: fmt.Sprintf("at most %d characters, not %d", questions.MaxReasonLen, n)},
		}}
	}
	return reason, nil
}

func RejectChange(now func() time.Time, reason, claim string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if err := openCheck(sess, claim, now()); err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.RejectionReason = questions.Rejected, nil, reason
		return nil, true, nil
	}
}

func ClaimChange(now func() time.Time, token string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if err := openCheck(sess, token, now()); err != nil {
			return nil, false, err
		}
		sess.Status.Status = questions.InProgress
		sess.Status.Claim = &questions.Claim{Token: token, By: questions.Self(), Since: now().UTC()}
		return nil, true, nil
	}
}

func ReleaseChange(token string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if sess.Status.Status != questions.InProgress || sess.Status.Claim == nil || sess.Status.Claim.Token != token {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = openState(sess), nil
		return nil, true, nil
	}
}

func AbandonChange(reason string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = questions.Abandoned, nil, reason
		return nil, true, nil
	}
}

func ExpireChange(after time.Duration) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = questions.TimedOut, nil
		sess.Status.Reason = fmt.Sprintf("no answer within %s", after)
		return nil, true, nil
	}
}

// OwnersChange settles what liveness and the clock reveal: an open set whose waiting call's process
// has exited becomes detached when it is detachable (the MCP tool's) and abandoned otherwise (never
// deleted unseen); a detached set past its expiry times out; a claim whose terminal has gone lapses.
// Processes on another host are never taken for gone.
func OwnersChange(now func() time.Time) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		if w, ok := waiter(sess); ok && w.Gone() {
			reason := fmt.Sprintf("the process that asked (pid %d) has exited", w.PID)
			if sess.Request.Detachable {
				return nil, detach(sess, reason), nil
			}
			sess.Status.Status, sess.Status.Claim = questions.Abandoned, nil
			sess.Status.Reason = reason
			return nil, true, nil
		}
		if expiredDetached(sess, now()) {
			sess.Status.Status, sess.Status.Claim = questions.TimedOut, nil
			sess.Status.Reason = "it expired while no call was waiting for it"
			return nil, true, nil
		}
		if expiredUnended(sess, now()) {
			sess.Status.Status, sess.Status.Claim = questions.TimedOut, nil
			sess.Status.Reason = "its time ran out and no waiting call ended it (the asker stopped, perhaps on another machine)"
			return nil, true, nil
		}
		if c := sess.Status.Claim; c != nil && ClaimLapsed(c, now()) {
			sess.Status.Status, sess.Status.Claim = openState(sess), nil
			return nil, true, nil
		}
		return nil, false, nil
	}
}

// NeedsOwnersCheck reports whether ownersChange may have something to do (cheap to ask first).
func NeedsOwnersCheck(sess *questions.Session, now time.Time) bool {
	if !sess.Status.Status.Open() {
		return false
	}
	w, waits := waiter(sess)
	return waits && w.Gone() || expiredDetached(sess, now) || expiredUnended(sess, now) ||
		sess.Status.Claim != nil && ClaimLapsed(sess.Status.Claim, now)
}

// ClaimLease is how long a claim held by a terminal qkit cannot see (on another machine sharing the
// store) keeps other terminals away; a claim by a terminal here lasts while its process lives.
const ClaimLease = 15 * time.Minute

// ClaimLapsed reports a claim that no longer keeps other terminals away: its terminal has exited, or
// it is on another machine and older than claimLease (a terminal that crashed there is never seen).
func ClaimLapsed(c *questions.Claim, now time.Time) bool {
	return c.By.Gone() || !c.By.Local() && now.Sub(c.Since) > ClaimLease
}

// ExpiryGrace is how long past its expiry an open set waits for its own call to time it out before a
// reader does: the call's timer, not a reader, normally ends it.
const ExpiryGrace = time.Minute

// expiredUnended reports an open set well past its expiry: the call that should have timed it out is
// gone, and qkit could not tell (it ran on another machine, or before a reboot).
func expiredUnended(sess *questions.Session, now time.Time) bool {
	exp := sess.ExpiresAt()
	return sess.Status.Status.Open() && exp != nil && now.After(exp.Add(ExpiryGrace))
}

// Adopt settles an open session whose files say more than its status: malformed files abandon it,
// and an answers.json written by another tool (without going through Answer) completes it when the
// answers are valid. done reports that the session was settled.
func Adopt(sess *questions.Session, now func() time.Time) (answers *questions.Answers, write, done bool) {
	if !sess.Status.Status.Open() {
		return nil, false, false
	}
	if sess.Problem != "" {
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = questions.Abandoned, nil, sess.Problem
		return nil, true, true
	}
	if sess.Answers == nil {
		return nil, false, false
	}
	checked, err := questions.CheckAnswers(sess.Set(), sess.Answers.Answers)
	if err != nil {
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = questions.Abandoned, nil, "answers.json is invalid: "+err.Error()
		return nil, true, true
	}
	sess.Status.Status, sess.Status.Claim = questions.Completed, nil
	if sameAnswers(checked, sess.Answers.Answers) {
		// Already in the normal form: only the status is written, one write fewer between the
		// person's answer and the assistant's result.
		return nil, true, true
	}
	ans := *sess.Answers
	ans.Answers, ans.SessionID, ans.CallID = checked, sess.ID, sess.Status.CallID
	if ans.AnsweredAt.IsZero() {
		ans.AnsweredAt = now().UTC()
	}
	return &ans, true, true
}

func sameAnswers(a, b []questions.Answer) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// DetachChange is Detach as a change, run by every store inside its own transaction.
func DetachChange(reason string) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		return nil, detach(sess, reason), nil
	}
}

// AttachChange is Attach for a call from this process as a change, run by every store inside its own
// transaction: a set that cannot be taken over gives a *ClosedError and is not written.
func AttachChange(now func() time.Time, timeout time.Duration) Change {
	return func(sess *questions.Session) (*questions.Answers, bool, error) {
		if !attach(sess, questions.Self(), now().UTC(), timeout) {
			return nil, false, &questions.ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: "no longer waiting for a repeated call"}
		}
		return nil, true, nil
	}
}

// detach applies Detach to sess and reports whether it changed.
func detach(sess *questions.Session, reason string) bool {
	if sess.Status.Detached {
		return false
	}
	switch sess.Status.Status {
	case questions.Pending, questions.InProgress:
		sess.Status.Detached, sess.Status.Waiter = true, nil
		if sess.Status.Status == questions.Pending {
			sess.Status.Status = questions.Detached
		}
		if reason != "" {
			sess.Status.Reason = reason + "; the set stays answerable and a repeated call collects the answer"
		}
		return true
	case questions.Completed, questions.Rejected:
		sess.Status.Detached = true
		return true
	}
	return false
}

// attach applies Attach to sess for a call in process by and reports whether it could.
func attach(sess *questions.Session, by questions.Process, now time.Time, timeout time.Duration) bool {
	if !questions.Attachable(sess) {
		return false
	}
	sess.Status.Detached = false
	if sess.Status.Status.Open() {
		if sess.Status.Status == questions.Detached {
			sess.Status.Status = questions.Pending
		}
		sess.Status.Waiter, sess.Status.Reason = &by, ""
		sess.Status.ExpiresAt = nil
		if timeout > 0 {
			exp := now.Add(timeout)
			sess.Status.ExpiresAt = &exp
		}
	}
	return true
}

// openState is the status of an open set nobody holds in a terminal: detached when no call waits.
func openState(sess *questions.Session) questions.State {
	if sess.Status.Detached {
		return questions.Detached
	}
	return questions.Pending
}

// waiter returns the process whose call waits for an open set; ok is false when none does.
func waiter(sess *questions.Session) (p questions.Process, ok bool) {
	if sess.Request == nil || sess.Status.Detached || !sess.Status.Status.Open() {
		return questions.Process{}, false
	}
	if sess.Status.Waiter != nil {
		return *sess.Status.Waiter, true
	}
	return sess.Request.Owner, true
}

// expiredDetached reports a detached open set past its expiry: with no call to end it, reading it
// does.
func expiredDetached(sess *questions.Session, now time.Time) bool {
	exp := sess.ExpiresAt()
	return sess.Status.Detached && sess.Status.Status.Open() && exp != nil && now.After(*exp)
}

// Transitions are a store's person-side operations, written once: each is one Change, applied by
// the store's own transition (the file store's lock and atomic write, the NATS store's revision
// check). A store embeds them (NewTransitions).
type Transitions struct {
	now   func() time.Time
	apply func(id string, c Change) (*questions.Session, error)
}

// NewTransitions binds the operations to a store's clock and its transition.
func NewTransitions(now func() time.Time, apply func(id string, c Change) (*questions.Session, error)) Transitions {
	return Transitions{now: now, apply: apply}
}

// Answer records the person's answers and completes the set. claim is the token from Claim when
// the answers come from a terminal that claimed the set, else empty. Exactly one of Answer,
// Reject, a timeout or an abandonment wins; the others get a ClosedError.
func (t Transitions) Answer(id string, answers []questions.Answer, claim string) (*questions.Session, error) {
	return t.apply(id, AnswerChange(t.now, answers, claim))
}

// Reject closes the set as rejected by the person, with an optional reason.
func (t Transitions) Reject(id, reason, claim string) (*questions.Session, error) {
	reason, err := CheckReason(reason)
	if err != nil {
		return nil, err
	}
	return t.apply(id, RejectChange(t.now, reason, claim))
}

// Claim marks a pending set as in progress in this terminal and returns the claim's token.
func (t Transitions) Claim(id string) (string, *questions.Session, error) {
	token := uuid.NewString()
	sess, err := t.apply(id, ClaimChange(t.now, token))
	if err != nil {
		return "", nil, err
	}
	return token, sess, nil
}

// Release hands a claimed set back (pending) when the terminal stops without answering.
func (t Transitions) Release(id, token string) error {
	_, err := t.apply(id, ReleaseChange(token))
	return err
}

// Abandon closes an open set as abandoned with a reason. A closed set is left as it is.
func (t Transitions) Abandon(id, reason string) (*questions.Session, error) {
	return t.apply(id, AbandonChange(reason))
}

// Sessions is a store's List from its own list of sets (each holding a session, with what that
// store alone keeps of it): list's error, or the sessions in the same order.
func Sessions[S interface{ Held() *questions.Session }](sets []S, err error) ([]*questions.Session, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*questions.Session, len(sets))
	for i, s := range sets {
		out[i] = s.Held()
	}
	return out, nil
}
