package lifecycle

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// Ask is the whole ask_user_questions flow (questions.Store's Ask), written once for every store:
// start a background cleanup of expired sessions (which delays neither the question nor the
// answer; the store's Close joins it through bg), create the session (questions.Prepare), wait for
// the person, and return the result (answered or rejected). Timeouts and abandonment are
// *questions.EndedError; the session id is in the returned session even then.
func Ask(ctx context.Context, s questions.Store, bg *Background, set *questions.QuestionSet, opts questions.AskOptions) (*questions.Result, *questions.Session, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Retention > 0 {
		bg.cleanup(s, opts.Retention, log)
	}

	opts.Logger = log
	sess, err := questions.Prepare(s, set, opts)
	if err != nil {
		log.Warn("Session failed", "error", err)
		return nil, nil, err
	}
	if opts.Created != nil {
		opts.Created(sess)
	}
	wopts := questions.WaitOptions{Timeout: opts.Timeout, ProgressEvery: opts.ProgressEvery, CancelReason: opts.CancelReason, Detach: opts.Detachable}
	if opts.Progress != nil {
		wopts.Progress = func(d time.Duration) { opts.Progress(d, sess) }
	}
	done, err := s.Wait(ctx, sess.ID, wopts)
	if err != nil {
		log.Warn("Session failed", "sessionId", sess.ID, "callId", sess.Status.CallID, "error", err)
		return nil, sess, err
	}
	res := questions.ResultOf(done)
	if done.Status.Status == questions.Rejected {
		log.Info("Session rejected by the user", "sessionId", sess.ID, "callId", res.CallID, "reason", res.RejectionReason)
	} else {
		log.Info("Session completed successfully", "sessionId", sess.ID, "callId", res.CallID)
	}
	return res, done, nil
}

// Background runs a store's cleanups one at a time, so that they delay no question and no answer;
// the store's Close joins them.
type Background struct {
	cleaning atomic.Bool    // a cleanup is running
	wg       sync.WaitGroup // the running cleanup, joined by wait
}

// cleanup starts s.Cleanup unless one is already running, logs what it removed, and only warns when
// it fails.
func (b *Background) cleanup(s questions.Store, retention time.Duration, log *slog.Logger) {
	if !b.cleaning.CompareAndSwap(false, true) {
		return // the running one covers this call too
	}
	b.wg.Go(func() {
		defer b.cleaning.Store(false)
		n, err := s.Cleanup(retention)
		if err != nil {
			log.Warn("cleanup of expired question sessions failed", "error", err)
		}
		if n > 0 {
			log.Info("removed expired question sessions", "count", n)
		}
	})
}

func (b *Background) Wait() { b.wg.Wait() }
