package dirstore

import (
	"context"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Wait blocks until the session is answered or rejected and returns it. It is woken by file events,
// with a slow poll as a safety net. On timeout the session becomes timed_out and the error is an
// *EndedError; when ctx is cancelled (the caller went away) the session becomes abandoned (detached
// with opts.Detach) and the error is ctx's.
func (s *Store) Wait(ctx context.Context, id string, opts questions.WaitOptions) (*questions.Session, error) {
	sb, poll := s.watch(filepath.Join(s.dir, id))
	defer s.unwatch(sb)
	pollT := time.NewTicker(poll)
	defer pollT.Stop()
	deadline, progress, stop := lifecycle.WaitClocks(opts)
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
			return sess.session(), err
		}
		if d := s.unsettled(sess); d > 0 {
			settle.Reset(d)
		}
		select {
		case <-ctx.Done():
			lifecycle.EndCancelledWait(s, s.logger, id, opts)
			return nil, ctx.Err()
		case <-deadline:
			if _, err := s.expire(id, opts.Timeout); err != nil {
				return nil, err
			}
			// Fall through to settled: an answer that won the race is still returned.
		case <-sb.C:
		case <-pollT.C:
		case <-settle.C:
		case <-progress:
			opts.Progress(time.Since(start))
		}
	}
}

// answersPending reports an answers.json beside an open status: an Answer in flight, an answer
// written by another tool, or a file still being written by hand.
func (s *set) answersPending() bool {
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
func (s *Store) unsettled(sess *set) time.Duration { return s.settleDelay(sess, false) }

// settleDelay is unsettled; locked says the caller holds the set's lock (inside a transition), so
// a held lock is its own and no change is in flight.
func (s *Store) settleDelay(sess *set, locked bool) time.Duration {
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
func (s *Store) settled(id string) (*set, bool, error) {
	sess, err := s.read(id)
	if err == nil {
		sess, err = s.reconcile(sess)
	}
	if err != nil {
		return nil, true, err
	}
	if sess.Status.Status == questions.Completed && (sess.Answers == nil || sess.Request == nil) {
		reason := "answers.json is missing or malformed"
		if sess.Problem != "" {
			reason = sess.Problem
		}
		if _, err := s.corrupt(id, reason); err != nil {
			return nil, true, err
		}
		return nil, true, &questions.EndedError{ID: id, Status: questions.Abandoned, Reason: reason}
	}
	done, err := lifecycle.Outcome(sess.Session)
	if err != nil {
		return nil, true, err
	}
	return sess, done, nil
}

// corrupt marks a completed session whose answers cannot be read as abandoned.
func (s *Store) corrupt(id, reason string) (*questions.Session, error) {
	return s.transition(id, func(sess *questions.Session) (*questions.Answers, bool, error) {
		if sess.Status.Status != questions.Completed || sess.Answers != nil && sess.Request != nil {
			return nil, false, nil
		}
		sess.Status.Status, sess.Status.Reason = questions.Abandoned, reason
		s.logger.Warn("question set abandoned: malformed files", "sessionId", id, "problem", reason)
		return nil, true, nil
	})
}

// WaitPending blocks until an open, unclaimed session exists and returns the oldest one. A session
// whose answers.json is being written (not settled yet) is not offered.
func (s *Store) WaitPending(ctx context.Context, opts questions.WaitPendingOptions) (*questions.Session, error) {
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
	// machine (a shared folder) looked at again when it ends (see lifecycle.ExitWatches).
	exits := lifecycle.NewExitWatches()
	defer exits.Close()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	for {
		all, err := s.list()
		if err != nil {
			return nil, err
		}
		sessions := make([]*questions.Session, len(all))
		for i, sess := range all {
			if lifecycle.Offers(opts, sess.Session) && !sess.answersPending() {
				return sess.Session, nil
			}
			sessions[i] = sess.Session
		}
		if next := exits.Claims(sessions, s.now()); next >= 0 {
			recheck.Reset(next)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-sb.C:
		case <-exits.Wake:
		case <-recheck.C:
		case <-pollT.C:
		}
	}
}
