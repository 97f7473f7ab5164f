package questions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// EndedError is how a wait ends without an answer: the session timed out or was abandoned.
type EndedError struct {
	ID     string
	Status State
	Reason string
}

func (e *EndedError) Error() string {
	switch e.Status {
	case TimedOut:
		return fmt.Sprintf("question set %s timed out waiting for the user's answer (%s)", e.ID, e.Reason)
	default:
		return fmt.Sprintf("question set %s was %s: %s", e.ID, e.Status, e.Reason)
	}
}

// ErrTimedOut matches an EndedError for a timed-out session (errors.Is).
var ErrTimedOut = errors.New("timed out")

// Is makes errors.Is(err, ErrTimedOut) true for timeouts.
func (e *EndedError) Is(target error) bool { return target == ErrTimedOut && e.Status == TimedOut }

// WaitOptions tune Wait.
type WaitOptions struct {
	// Timeout ends the wait and marks the session timed_out; 0 waits until answered or cancelled.
	Timeout time.Duration
	// Progress, when set, is called every ProgressEvery (default 10s) while waiting.
	Progress      func(elapsed time.Duration)
	ProgressEvery time.Duration
	// CancelReason is recorded when ctx is cancelled (default: "the caller cancelled the wait").
	CancelReason string
	// Detach: when ctx is cancelled the set becomes detached (answerable, for a repeated call)
	// instead of abandoned.
	Detach bool
}

// Wait blocks until the session is answered or rejected and returns it. It is woken by file events,
// with a slow poll as a safety net. On timeout the session becomes timed_out and the error is an
// *EndedError; when ctx is cancelled (the caller went away) the session becomes abandoned (detached
// with opts.Detach) and the error is ctx's.
func (s *FileStore) Wait(ctx context.Context, id string, opts WaitOptions) (*Session, error) {
	sb, poll := s.watch(filepath.Join(s.dir, id))
	defer s.unwatch(sb)
	pollT := time.NewTicker(poll)
	defer pollT.Stop()
	deadline, progress, stop := waitClocks(opts)
	defer stop()
	start := time.Now()
	// An answers.json beside an open status is settled only once it has been quiet for a moment
	// (see unsettled); this timer re-reads the session when that moment has passed.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		sess, done, err := s.settled(id)
		if done || err != nil {
			return sess, err
		}
		if d := s.unsettled(sess); d > 0 {
			settle.Reset(d)
		}
		select {
		case <-ctx.Done():
			endCancelledWait(s, s.logger, id, opts)
			return nil, ctx.Err()
		case <-deadline:
			if _, err := s.expire(id, opts.Timeout); err != nil {
				return nil, err
			}
			// Fall through to settled: an answer that won the race is still returned.
		case <-sb.c:
		case <-pollT.C:
		case <-settle.C:
		case <-progress:
			opts.Progress(time.Since(start))
		}
	}
}

// answersPending reports an answers.json beside an open status: an Answer in flight, an answer
// written by another tool, or a file still being written by hand.
func (s *Session) answersPending() bool {
	return s.Status.Status.Open() && (s.Answers != nil || s.answersBad)
}

// adoptDelay is how long an answers.json still open for writing (written in place), or one whose
// writer cannot be known, must stay unchanged before it is taken as the answer. A closed file is
// taken at once.
const adoptDelay = 100 * time.Millisecond

// malformedDelay is how long an answers.json that does not parse must stay unchanged before it
// abandons the session: a hand-written one may be caught between its truncation and its write.
const malformedDelay = time.Second

// unsettled reports how long the session's answers.json must still stay unchanged before it is
// settled (adopted as the answer, or abandoning the session when malformed); 0 when it can be
// settled now or there is nothing to settle. It goes by the file's modification time, so it works
// the same with or without file events, and for list and show as well as for waits.
func (s *FileStore) unsettled(sess *Session) time.Duration { return s.settleDelay(sess, false) }

// settleDelay is unsettled; locked says the caller holds the set's lock (inside a transition), so
// a held lock is its own and no change is in flight.
func (s *FileStore) settleDelay(sess *Session, locked bool) time.Duration {
	if !sess.answersPending() || sess.answersMod.IsZero() {
		return 0
	}
	delay := adoptDelay
	if sess.answersBad {
		delay = malformedDelay
	} else if busy, known := beingWritten(s.path(sess.ID, AnswersFile)); known && !busy {
		// Complete and closed: renamed into place (by hand, or by an Answer about to write the
		// status), or written in place and closed. Taken at once, unless a change holds the lock:
		// then its status write (an event) ends the wait sooner than queueing behind the lock would.
		if !locked && lockHeld(s.path(sess.ID, StatusFile)) {
			return adoptDelay
		}
		return 0
	}
	age := s.now().Sub(sess.answersMod)
	if age < 0 || age >= delay {
		return 0 // old enough, or dated in the future (a clock off): settle rather than wait forever
	}
	return delay - age
}

// settled reads the session and reports whether the wait is over: answered (returned), rejected
// (returned) or ended without an answer (EndedError).
func (s *FileStore) settled(id string) (*Session, bool, error) {
	sess, err := s.read(id)
	if err == nil {
		sess, err = s.reconcile(sess)
	}
	if err != nil {
		return nil, true, err
	}
	if sess.Status.Status == Completed && (sess.Answers == nil || sess.Request == nil) {
		reason := "answers.json is missing or malformed"
		if sess.Problem != "" {
			reason = sess.Problem
		}
		if _, err := s.corrupt(id, reason); err != nil {
			return nil, true, err
		}
		return nil, true, &EndedError{ID: id, Status: Abandoned, Reason: reason}
	}
	done, err := outcome(sess)
	if err != nil {
		return nil, true, err
	}
	return sess, done, nil
}

// outcome reports whether a wait on sess is over: answered or rejected (done, no error), or ended
// without an answer (an *EndedError).
func outcome(sess *Session) (bool, error) {
	switch sess.Status.Status {
	case Completed, Rejected:
		return true, nil
	case TimedOut, Abandoned:
		return true, &EndedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason}
	}
	return false, nil
}

// corrupt marks a completed session whose answers cannot be read as abandoned.
func (s *FileStore) corrupt(id, reason string) (*Session, error) {
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if sess.Status.Status != Completed || sess.Answers != nil && sess.Request != nil {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Reason = Abandoned, reason
		s.logger.Warn("question set abandoned: malformed files", "sessionId", id, "problem", reason)
		return nil, true, nil
	})
}

// WaitPendingOptions tune WaitPending.
type WaitPendingOptions struct {
	// Timeout ends the wait with context.DeadlineExceeded; 0 waits until cancelled.
	Timeout time.Duration
	// Skip leaves out sessions the caller has already seen.
	Skip func(id string) bool
}

// takes says whether a wait for a pending set offers sess: offered to a person, and not skipped.
func (o WaitPendingOptions) takes(sess *Session) bool {
	return sess.Offered() && (o.Skip == nil || !o.Skip(sess.ID))
}

// WaitPending blocks until an open, unclaimed session exists and returns the oldest one. A session
// whose answers.json is being written (not settled yet) is not offered.
func (s *FileStore) WaitPending(ctx context.Context, opts WaitPendingOptions) (*Session, error) {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	sb, poll := s.watch(s.dir)
	defer s.unwatch(sb)
	pollT := time.NewTicker(poll) // the safety net for lost file events
	defer pollT.Stop()
	// A claim that lapses writes nothing: its terminal's exit is watched, and a lease from another
	// machine (a shared folder) looked at again when it ends (see exitWatches).
	exits := newExitWatches()
	defer exits.close()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	for {
		all, err := s.List()
		if err != nil {
			return nil, err
		}
		for _, sess := range all {
			if opts.takes(sess) && !sess.answersPending() {
				return sess, nil
			}
		}
		if next := exits.claims(all, s.now()); next >= 0 {
			recheck.Reset(next)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-sb.c:
		case <-exits.wake:
		case <-recheck.C:
		case <-pollT.C:
		}
	}
}
