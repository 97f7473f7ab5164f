package dirstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// transition runs fn on the session under its lock and writes what fn changed. fn returns whether to
// write status.json (and answers.json when answers is non-nil).
func (s *Store) transition(id string, fn lifecycle.Change) (*questions.Session, error) {
	sess, err := s.transitionWith(id, writeJSON, func(cur *set) (*questions.Answers, bool, error) { return fn(cur.Session) })
	return sess.session(), err
}

// transitionWith is transition writing through write, with fn given what the file store knows of
// the set's answers.json.
func (s *Store) transitionWith(id string, write func(path string, v any) error, fn func(cur *set) (*questions.Answers, bool, error)) (*set, error) {
	if !questions.ValidID(id) {
		return nil, &questions.InvalidIDError{ID: id}
	}
	if _, err := os.Stat(filepath.Join(s.dir, id)); err != nil {
		return nil, fmt.Errorf("question set %s: %w", id, questions.ErrNotFound)
	}
	lock, err := filestore.LockFor(s.path(id, StatusFile), dirPerm)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	sess, err := s.read(id)
	if errors.Is(err, questions.ErrNotFound) {
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

// expire closes an open session as timed out. A session answered meanwhile keeps its answer.
func (s *Store) expire(id string, after time.Duration) (*questions.Session, error) {
	expire := lifecycle.ExpireChange(after)
	return s.transition(id, func(sess *questions.Session) (*questions.Answers, bool, error) {
		if ans, write, done := lifecycle.Adopt(sess, s.now); done {
			return ans, write, nil
		}
		return expire(sess)
	})
}

// reconcile settles what reading alone reveals: malformed files and answers written by other tools,
// owners that have exited (abandoned, never deleted unseen) and claims whose terminal has gone.
func (s *Store) reconcile(sess *set) (*set, error) {
	if s.unsettled(sess) > 0 {
		return sess, nil // an answer in flight, or a file still being written: not yet
	}
	if !(sess.Status.Status.Open() && (sess.Problem != "" || sess.Answers != nil) || lifecycle.NeedsOwnersCheck(sess.Session, s.now())) {
		return sess, nil
	}
	return s.transitionWith(sess.ID, writeSettled, func(cur *set) (*questions.Answers, bool, error) {
		if s.settleDelay(cur, true) > 0 {
			return nil, false, nil
		}
		if ans, write, done := lifecycle.Adopt(cur.Session, s.now); done {
			if cur.Status.Status == questions.Abandoned {
				s.logger.Warn("question set abandoned: malformed files", "sessionId", cur.ID, "problem", cur.Status.Reason)
			}
			return ans, write, nil
		}
		return lifecycle.OwnersChange(s.now)(cur.Session)
	})
}

// Detach records that the call waiting for the set went away: an open set becomes detached and
// stays answerable; a set answered or rejected at that very moment keeps its outcome for a repeated
// call. Finished sets without an outcome are left as they are.
func (s *Store) Detach(id, reason string) (*questions.Session, error) {
	return s.transition(id, lifecycle.DetachChange(reason))
}

// Attach hands the set to a repeated call from this process: a detached set waits for this call
// again (pending, with a new expiry after timeout, 0 for none); an outcome no call has collected is
// marked collected. A set that cannot be taken over gives a *ClosedError.
func (s *Store) Attach(id string, timeout time.Duration) (*questions.Session, error) {
	return s.transition(id, lifecycle.AttachChange(s.now, timeout))
}
