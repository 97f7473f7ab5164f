package questions

import (
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
func (s *FileStore) transition(id string, fn func(sess *Session) (answers *Answers, write bool, err error)) (*Session, error) {
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
	if err != nil {
		return nil, err
	}
	answers, write, err := fn(sess)
	if err != nil || !write {
		return sess, err
	}
	sess.Status.UpdatedAt = s.now().UTC()
	if answers != nil {
		if err := writeJSON(s.path(id, AnswersFile), answers); err != nil {
			return nil, err
		}
		sess.Answers = answers
	}
	if err := writeJSON(s.path(id, StatusFile), sess.Status); err != nil {
		return nil, err
	}
	return sess, nil
}

// openCheck refuses a change to a session that is closed or claimed by another live terminal.
func openCheck(sess *Session, claim string) error {
	if !sess.Status.Status.Open() {
		return &ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason}
	}
	if sess.Request == nil {
		return &ClosedError{ID: sess.ID, Status: Abandoned, Reason: sess.Problem}
	}
	if c := sess.Status.Claim; c != nil && claim != "" && c.Token != claim && !c.By.Gone() {
		return fmt.Errorf("question set %s %w (pid %d)", sess.ID, ErrClaimed, c.By.PID)
	}
	return nil
}

// Answer records the person's answers and completes the session. claim is the token from Claim when
// the answers come from a terminal that claimed the session, else empty. Exactly one of Answer,
// Reject, a timeout or an abandonment wins; the others get a ClosedError.
func (s *FileStore) Answer(id string, answers []Answer, claim string) (*Session, error) {
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, claim); err != nil {
			return nil, false, err
		}
		checked, err := CheckAnswers(sess.Set(), answers)
		if err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim = Completed, nil
		return &Answers{SessionID: sess.ID, CallID: sess.Status.CallID, AnsweredAt: s.now().UTC(), Answers: checked}, true, nil
	})
}

// Reject closes the session as rejected by the person, with an optional reason.
func (s *FileStore) Reject(id, reason, claim string) (*Session, error) {
	reason = strings.TrimSpace(reason)
	if n := len([]rune(reason)); n > MaxReasonLen {
		ve := &ValidationError{}
		ve.add("reason", "at most %d characters, not %d", MaxReasonLen, n)
		return nil, ve
	}
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, claim); err != nil {
			return nil, false, err
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.RejectionReason = Rejected, nil, reason
		return nil, true, nil
	})
}

// Claim marks a pending session as in progress in this terminal and returns the claim's token.
func (s *FileStore) Claim(id string) (string, *Session, error) {
	token := uuid.NewString()
	sess, err := s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if err := openCheck(sess, token); err != nil {
			return nil, false, err
		}
		sess.Status.Status = InProgress
		sess.Status.Claim = &Claim{Token: token, By: Self(), Since: s.now().UTC()}
		return nil, true, nil
	})
	if err != nil {
		return "", nil, err
	}
	return token, sess, nil
}

// Release hands a claimed session back (pending) when the terminal stops without answering.
func (s *FileStore) Release(id, token string) error {
	_, err := s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if sess.Status.Status != InProgress || sess.Status.Claim == nil || sess.Status.Claim.Token != token {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = openState(sess), nil
		return nil, true, nil
	})
	return err
}

// Abandon closes an open session as abandoned with a reason. A closed session is left as it is.
func (s *FileStore) Abandon(id, reason string) (*Session, error) {
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = Abandoned, nil, reason
		return nil, true, nil
	})
}

// expire closes an open session as timed out. A session answered meanwhile keeps its answer.
func (s *FileStore) expire(id string, after time.Duration) (*Session, error) {
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if ans, write, done := adopt(sess, s.now); done {
			return ans, write, nil
		}
		if !sess.Status.Status.Open() {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Claim = TimedOut, nil
		sess.Status.Reason = fmt.Sprintf("no answer within %s", after)
		return nil, true, nil
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
	ans := *sess.Answers
	ans.Answers, ans.SessionID, ans.CallID = checked, sess.ID, sess.Status.CallID
	if ans.AnsweredAt.IsZero() {
		ans.AnsweredAt = now().UTC()
	}
	sess.Status.Status, sess.Status.Claim = Completed, nil
	return &ans, true, true
}

// reconcile settles what reading alone reveals: malformed files and answers written by other tools,
// owners that have exited (abandoned, never deleted unseen) and claims whose terminal has gone.
func (s *FileStore) reconcile(sess *Session) (*Session, error) {
	if s.unsettled(sess) > 0 {
		return sess, nil // an answer in flight, or a file still being written: not yet
	}
	w, waits := waiter(sess)
	needs := sess.Status.Status.Open() && (sess.Problem != "" || sess.Answers != nil ||
		waits && w.Gone() || expiredDetached(sess, s.now()) ||
		sess.Status.Claim != nil && sess.Status.Claim.By.Gone())
	if !needs {
		return sess, nil
	}
	return s.transition(sess.ID, func(cur *Session) (*Answers, bool, error) {
		if s.unsettled(cur) > 0 {
			return nil, false, nil
		}
		if ans, write, done := adopt(cur, s.now); done {
			if cur.Status.Status == Abandoned {
				s.logger.Warn("question set abandoned: malformed files", "sessionId", cur.ID, "problem", cur.Status.Reason)
			}
			return ans, write, nil
		}
		if !cur.Status.Status.Open() {
			return nil, false, nil
		}
		if w, ok := waiter(cur); ok && w.Gone() {
			reason := fmt.Sprintf("the process that asked (pid %d) has exited", w.PID)
			if cur.Request.Detachable {
				return nil, detach(cur, reason), nil
			}
			cur.Status.Status, cur.Status.Claim = Abandoned, nil
			cur.Status.Reason = reason
			return nil, true, nil
		}
		if expiredDetached(cur, s.now()) {
			cur.Status.Status, cur.Status.Claim = TimedOut, nil
			cur.Status.Reason = "it expired while no call was waiting for it"
			return nil, true, nil
		}
		if c := cur.Status.Claim; c != nil && c.By.Gone() {
			cur.Status.Status, cur.Status.Claim = openState(cur), nil
			return nil, true, nil
		}
		return nil, false, nil
	})
}
