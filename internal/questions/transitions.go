package questions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// transition runs fn on the session under its lock and writes what fn changed. fn returns whether to
// write status.json (and answers.json when answers is non-nil).
func (s *FileStore) transition(id string, fn change) (*Session, error) {
	return s.transitionWith(id, writeJSON, fn)
}

// transitionWith is transition writing through write.
func (s *FileStore) transitionWith(id string, write func(path string, v any) error, fn change) (*Session, error) {
	if !ValidID(id) {
		return nil, &InvalidIDError{ID: id}
	}
	if _, err := os.Stat(filepath.Join(s.dir, id)); err != nil {
		return nil, fmt.Errorf("question set %s: %w", id, ErrNotFound)
	}
	lock, err := filestore.LockFor(s.path(id, StatusFile), dirPerm)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	sess, err := s.read(id)
	if errors.Is(err, ErrNotFound) {
		// Removed while we took the lock, which may have left the folder with only the lock file.
		_ = os.Remove(s.path(id, StatusFile) + ".lock")
		_ = os.Remove(filepath.Join(s.dir, id))
	}
	if err != nil {
		return nil, err
	}
	answers, changed, err := fn(sess)
	if err != nil || !changed {
		return sess, err
	}
	sess.Status.UpdatedAt = s.now().UTC()
	if answers != nil {
		if err := write(s.path(id, AnswersFile), answers); err != nil {
			return nil, err
		}
		sess.Answers = answers
	}
	if err := write(s.path(id, StatusFile), sess.Status); err != nil {
		return nil, err
	}
	return sess, nil
}

// openCheck refuses a change to a session that is closed or claimed by another live terminal.
func openCheck(sess *Session, claim string, now time.Time) error {
	if !sess.Status.Status.Open() {
		return &ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason}
	}
	if sess.Request == nil {
		return &ClosedError{ID: sess.ID, Status: Abandoned, Reason: sess.Problem}
	}
	if c := sess.Status.Claim; c != nil && claim != "" && c.Token != claim && !claimLapsed(c, now) {
		return fmt.Errorf("question set %s %w (pid %d)", sess.ID, ErrClaimed, c.By.PID)
	}
	return nil
}

// change decides one step of a session's life on its current state: it returns whether to write the
// status (and the answers, when non-nil). Every store runs a change under its own guard against a
// concurrent writer (the file store's lock, the NATS store's revision check), so a change always sees
// the state it replaces, and exactly one of several racing changes wins.
type change func(sess *Session) (answers *Answers, write bool, err error)

func answerChange(now func() time.Time, answers []Answer, claim string) change {
	return func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, claim, now()); err != nil {
			return nil, false, err
		}
		checked, err := CheckAnswers(sess.Set(), answers)
		if err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim = Completed, nil
		return &Answers{SessionID: sess.ID, CallID: sess.Status.CallID, AnsweredAt: now().UTC(), Answers: checked}, true, nil
	}
}

// checkReason trims a rejection reason and refuses one that is too long.
func checkReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if n := len([]rune(reason)); n > MaxReasonLen {
		ve := &ValidationError{}
		ve.add("reason", "at most %d characters, not %d", MaxReasonLen, n)
		return "", ve
	}
	return reason, nil
}

func rejectChange(now func() time.Time, reason, claim string) change {
	return func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, claim, now()); err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.RejectionReason = Rejected, nil, reason
		return nil, true, nil
	}
}

func claimChange(now func() time.Time, token string) change {
	return func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, token, now()); err != nil {
			return nil, false, err
		}
		sess.Status.Status = InProgress
		sess.Status.Claim = &Claim{Token: token, By: Self(), Since: now().UTC()}
		return nil, true, nil
	}
}

func releaseChange(token string) change {
	return func(sess *Session) (*Answers, bool, error) {
		if sess.Status.Status != InProgress || sess.Status.Claim == nil || sess.Status.Claim.Token != token {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = openState(sess), nil
		return nil, true, nil
	}
}

func abandonChange(reason string) change {
	return func(sess *Session) (*Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = Abandoned, nil, reason
		return nil, true, nil
	}
}

func expireChange(after time.Duration) change {
	return func(sess *Session) (*Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = TimedOut, nil
		sess.Status.Reason = fmt.Sprintf("no answer within %s", after)
		return nil, true, nil
	}
}

// ownersChange settles what liveness and the clock reveal: an open set whose waiting call's process
// has exited becomes detached when it is detachable (the MCP tool's) and abandoned otherwise (never
// deleted unseen); a detached set past its expiry times out; a claim whose terminal has gone lapses.
// Processes on another host are never taken for gone.
func ownersChange(now func() time.Time) change {
	return func(sess *Session) (*Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		if w, ok := waiter(sess); ok && w.Gone() {
			reason := fmt.Sprintf("the process that asked (pid %d) has exited", w.PID)
			if sess.Request.Detachable {
				return nil, detach(sess, reason), nil
			}
			sess.Status.Status, sess.Status.Claim = Abandoned, nil
			sess.Status.Reason = reason
			return nil, true, nil
		}
		if expiredDetached(sess, now()) {
			sess.Status.Status, sess.Status.Claim = TimedOut, nil
			sess.Status.Reason = "it expired while no call was waiting for it"
			return nil, true, nil
		}
		if expiredUnended(sess, now()) {
			sess.Status.Status, sess.Status.Claim = TimedOut, nil
			sess.Status.Reason = "its time ran out and no waiting call ended it (the asker stopped, perhaps on another machine)"
			return nil, true, nil
		}
		if c := sess.Status.Claim; c != nil && claimLapsed(c, now()) {
			sess.Status.Status, sess.Status.Claim = openState(sess), nil
			return nil, true, nil
		}
		return nil, false, nil
	}
}

// needsOwnersCheck reports whether ownersChange may have something to do (cheap to ask first).
func needsOwnersCheck(sess *Session, now time.Time) bool {
	if !sess.Status.Status.Open() {
		return false
	}
	w, waits := waiter(sess)
	return waits && w.Gone() || expiredDetached(sess, now) || expiredUnended(sess, now) ||
		sess.Status.Claim != nil && claimLapsed(sess.Status.Claim, now)
}

// claimLease is how long a claim held by a terminal qkit cannot see (on another machine sharing the
// store) keeps other terminals away; a claim by a terminal here lasts while its process lives.
const claimLease = 15 * time.Minute

// claimLapsed reports a claim that no longer keeps other terminals away: its terminal has exited, or
// it is on another machine and older than claimLease (a terminal that crashed there is never seen).
func claimLapsed(c *Claim, now time.Time) bool {
	return c.By.Gone() || !c.By.Local() && now.Sub(c.Since) > claimLease
}

// expiryGrace is how long past its expiry an open set waits for its own call to time it out before a
// reader does: the call's timer, not a reader, normally ends it.
const expiryGrace = time.Minute

// expiredUnended reports an open set well past its expiry: the call that should have timed it out is
// gone, and qkit could not tell (it ran on another machine, or before a reboot).
func expiredUnended(sess *Session, now time.Time) bool {
	exp := sess.ExpiresAt()
	return sess.Status.Status.Open() && exp != nil && now.After(exp.Add(expiryGrace))
}

// Answer records the person's answers and completes the session. claim is the token from Claim when
// the answers come from a terminal that claimed the session, else empty. Exactly one of Answer,
// Reject, a timeout or an abandonment wins; the others get a ClosedError.
func (s *FileStore) Answer(id string, answers []Answer, claim string) (*Session, error) {
	return s.transition(id, answerChange(s.now, answers, claim))
}

// Reject closes the session as rejected by the person, with an optional reason.
func (s *FileStore) Reject(id, reason, claim string) (*Session, error) {
	reason, err := checkReason(reason)
	if err != nil {
		return nil, err
	}
	return s.transition(id, rejectChange(s.now, reason, claim))
}

// Claim marks a pending session as in progress in this terminal and returns the claim's token.
func (s *FileStore) Claim(id string) (string, *Session, error) {
	token := uuid.NewString()
	sess, err := s.transition(id, claimChange(s.now, token))
	if err != nil {
		return "", nil, err
	}
	return token, sess, nil
}

// Release hands a claimed session back (pending) when the terminal stops without answering.
func (s *FileStore) Release(id, token string) error {
	_, err := s.transition(id, releaseChange(token))
	return err
}

// Abandon closes an open session as abandoned with a reason. A closed session is left as it is.
func (s *FileStore) Abandon(id, reason string) (*Session, error) {
	return s.transition(id, abandonChange(reason))
}

// expire closes an open session as timed out. A session answered meanwhile keeps its answer.
func (s *FileStore) expire(id string, after time.Duration) (*Session, error) {
	expire := expireChange(after)
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if ans, write, done := adopt(sess, s.now); done {
			return ans, write, nil
		}
		return expire(sess)
	})
}

// adopt settles an open session whose files say more than its status: malformed files abandon it,
// and an answers.json written by another tool (without going through Answer) completes it when the
// answers are valid. done reports that the session was settled.
func adopt(sess *Session, now func() time.Time) (answers *Answers, write, done bool) {
	if !sess.Status.Status.Open() {
		return nil, false, false
	}
	if sess.Problem != "" {
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = Abandoned, nil, sess.Problem
		return nil, true, true
	}
	if sess.Answers == nil {
		return nil, false, false
	}
	checked, err := CheckAnswers(sess.Set(), sess.Answers.Answers)
	if err != nil {
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = Abandoned, nil, "answers.json is invalid: "+err.Error()
		return nil, true, true
	}
	sess.Status.Status, sess.Status.Claim = Completed, nil
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

func sameAnswers(a, b []Answer) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// reconcile settles what reading alone reveals: malformed files and answers written by other tools,
// owners that have exited (abandoned, never deleted unseen) and claims whose terminal has gone.
func (s *FileStore) reconcile(sess *Session) (*Session, error) {
	if s.unsettled(sess) > 0 {
		return sess, nil // an answer in flight, or a file still being written: not yet
	}
	if !(sess.Status.Status.Open() && (sess.Problem != "" || sess.Answers != nil) || needsOwnersCheck(sess, s.now())) {
		return sess, nil
	}
	return s.transitionWith(sess.ID, writeSettled, func(cur *Session) (*Answers, bool, error) {
		if s.settleDelay(cur, true) > 0 {
			return nil, false, nil
		}
		if ans, write, done := adopt(cur, s.now); done {
			if cur.Status.Status == Abandoned {
				s.logger.Warn("question set abandoned: malformed files", "sessionId", cur.ID, "problem", cur.Status.Reason)
			}
			return ans, write, nil
		}
		return ownersChange(s.now)(cur)
	})
}
