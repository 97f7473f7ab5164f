package questions

import (
	"encoding/json"
	"time"
)

// A detachable set (one asked through the MCP tool) outlives the call that asked it. MCP clients
// often give up on a call after a minute; the person may answer later, and the assistant, which
// knows the tool is idempotent, asks the same questions again. The rules, written once here as
// functions over a Session so that every store applies them under its own lock:
//
//   - the call goes away (cancelled, or its server exited): the set becomes detached (detach);
//   - a repeated call with the same questions takes a detached set over, or collects an outcome
//     that reached no call (attach);
//   - a detached set still expires at its expiry, as a waiting call would have ended it.

// Detach records that the call waiting for the set went away: an open set becomes detached and
// stays answerable; a set answered or rejected at that very moment keeps its outcome for a repeated
// call. Finished sets without an outcome are left as they are.
func (s *FileStore) Detach(id, reason string) (*Session, error) {
	return s.transition(id, detachChange(reason))
}

// Attach hands the set to a repeated call from this process: a detached set waits for this call
// again (pending, with a new expiry after timeout, 0 for none); an outcome no call has collected is
// marked collected. A set that cannot be taken over gives a *ClosedError.
func (s *FileStore) Attach(id string, timeout time.Duration) (*Session, error) {
	return s.transition(id, attachChange(s.now, timeout))
}

// detachChange is Detach as a change, run by every store inside its own transaction.
func detachChange(reason string) change {
	return func(sess *Session) (*Answers, bool, error) {
		return nil, detach(sess, reason), nil
	}
}

// attachChange is Attach for a call from this process as a change, run by every store inside its own
// transaction: a set that cannot be taken over gives a *ClosedError and is not written.
func attachChange(now func() time.Time, timeout time.Duration) change {
	return func(sess *Session) (*Answers, bool, error) {
		if !attach(sess, Self(), now().UTC(), timeout) {
			return nil, false, &ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: "no longer waiting for a repeated call"}
		}
		return nil, true, nil
	}
}

// FindDetached returns the newest set of s asked from source with exactly these questions that a
// repeated call can take over (see Attachable), or nil.
func FindDetached(s Store, set *QuestionSet, source string) (*Session, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if sess := all[i]; Attachable(sess) && sess.Request.Source == source && SameQuestions(sess.Request.Questions, set.Questions) {
			return sess, nil
		}
	}
	return nil, nil
}

// Attachable reports whether a repeated call can take the set over: it is detached and open, or its
// outcome reached no call.
func Attachable(sess *Session) bool {
	if !sess.Status.Detached || sess.Request == nil || sess.Problem != "" {
		return false
	}
	switch sess.Status.Status {
	case Detached, InProgress, Completed, Rejected:
		return true
	}
	return false
}

// SameQuestions reports whether two question sets ask the same thing, field for field.
func SameQuestions(a, b []Question) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// detach applies Detach to sess and reports whether it changed.
func detach(sess *Session, reason string) bool {
	if sess.Status.Detached {
		return false
	}
	switch sess.Status.Status {
	case Pending, InProgress:
		sess.Status.Detached, sess.Status.Waiter = true, nil
		if sess.Status.Status == Pending {
			sess.Status.Status = Detached
		}
		if reason != "" {
			sess.Status.Reason = reason + "; the set stays answerable and a repeated call collects the answer"
		}
		return true
	case Completed, Rejected:
		sess.Status.Detached = true
		return true
	}
	return false
}

// attach applies Attach to sess for a call in process by and reports whether it could.
func attach(sess *Session, by Process, now time.Time, timeout time.Duration) bool {
	if !Attachable(sess) {
		return false
	}
	sess.Status.Detached = false
	if sess.Status.Status.Open() {
		if sess.Status.Status == Detached {
			sess.Status.Status = Pending
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
func openState(sess *Session) State {
	if sess.Status.Detached {
		return Detached
	}
	return Pending
}

// waiter returns the process whose call waits for an open set; ok is false when none does.
func waiter(sess *Session) (p Process, ok bool) {
	if sess.Request == nil || sess.Status.Detached || !sess.Status.Status.Open() {
		return Process{}, false
	}
	if sess.Status.Waiter != nil {
		return *sess.Status.Waiter, true
	}
	return sess.Request.Owner, true
}

// ExpiresAt is when the set stops waiting for an answer (nil: never).
func (s *Session) ExpiresAt() *time.Time {
	if s.Status.ExpiresAt != nil {
		return s.Status.ExpiresAt
	}
	if s.Request != nil {
		return s.Request.ExpiresAt
	}
	return nil
}

// expiredDetached reports a detached open set past its expiry: with no call to end it, reading it
// does.
func expiredDetached(sess *Session, now time.Time) bool {
	exp := sess.ExpiresAt()
	return sess.Status.Detached && sess.Status.Status.Open() && exp != nil && now.After(*exp)
}
