package questions

import (
	"encoding/json"
	"time"
)

// A detachable set (one asked through the MCP tool) outlives the call that asked it. MCP clients
// often give up on a call after a minute; the person may answer later, and the assistant, which
// knows the tool is idempotent, asks the same questions again. What a repeated call looks for is
// here; the changes themselves are written once in internal/lifecycle (change.go: DetachChange,
// AttachChange) as functions over a Session, so that every store applies them under its own lock:
//
//   - the call goes away (cancelled, or its server exited): the set becomes detached (detach);
//   - a repeated call with the same questions takes a detached set over, or collects an outcome
//     that reached no call (attach);
//   - a detached set still expires at its expiry, as a waiting call would have ended it.

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
