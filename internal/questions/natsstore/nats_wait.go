package natsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// touch rewrites an open set, so the bucket's TTL does not remove a set someone still waits for. Only
// its revision and updatedAt change.
func (s *Store) touch(id string) error {
	_, err := s.transition(id, func(sess *questions.Session) (*questions.Answers, bool, error) {
		return nil, sess.Status.Status.Open(), nil
	})
	return err
}

// Wait blocks until the set is answered or rejected, or ends without an answer (see Store). It is
// woken by the bucket's watcher; while the server is away it keeps waiting (the timeout still
// applies) and re-reads the set once the connection is back.
func (s *Store) Wait(ctx context.Context, id string, opts questions.WaitOptions) (*questions.Session, error) {
	sb := s.watch(id)
	defer s.unwatch(sb)
	deadline, progress, stop := lifecycle.WaitClocks(opts)
	defer stop()
	var refresh <-chan time.Time
	if s.ttl > 0 {
		t := time.NewTicker(max(s.ttl/3, 10*time.Millisecond))
		defer t.Stop()
		refresh = t.C
	}
	// retry re-reads after an error of the connection; file or watch events do the rest.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := 250 * time.Millisecond
	start := time.Now()
	expired := false
	for {
		sess, err := s.read(id)
		if err == nil {
			sess, err = s.reconcile(sess)
		}
		var unreach *UnreachableError
		switch {
		case errors.As(err, &unreach) && !s.nc.IsClosed():
			if backoff == 250*time.Millisecond {
				s.logger.Warn("waiting for the NATS server to come back", "sessionId", id, "error", err)
			}
			retry.Reset(backoff)
			backoff = min(2*backoff, 5*time.Second)
		case err != nil:
			return nil, err
		default:
			backoff = 250 * time.Millisecond
			if done, err := lifecycle.Outcome(sess.Session); done {
				if err != nil {
					return nil, err
				}
				return sess.Session, nil
			}
			if expired {
				_, terr := s.transition(id, lifecycle.ExpireChange(opts.Timeout))
				switch {
				case terr == nil:
					continue // read again: an answer that won the race is still returned
				case errors.Is(terr, questions.ErrNotFound):
					return nil, terr
				}
				err = terr
			}
		}
		if expired && err != nil {
			// The server is away at the deadline: end the wait anyway, saying the set could not be
			// marked (it stays open in the bucket until someone answers it or the TTL removes it).
			return nil, &questions.EndedError{ID: id, Status: questions.TimedOut, Reason: fmt.Sprintf("no answer within %s; %v, so the set could not be marked timed_out", opts.Timeout, err)}
		}
		select {
		case <-ctx.Done():
			lifecycle.EndCancelledWait(s, s.logger, id, opts)
			return nil, ctx.Err()
		case <-deadline:
			expired = true
		case <-sb.C:
		case <-retry.C:
		case <-refresh:
			if err := s.touch(id); err != nil && !errors.Is(err, questions.ErrNotFound) {
				s.logger.Warn("could not refresh the open question set", "sessionId", id, "error", err)
			}
		case <-progress:
			opts.Progress(time.Since(start))
		}
	}
}

// WaitPending blocks until an open, unclaimed set exists and returns the oldest one.
func (s *Store) WaitPending(ctx context.Context, opts questions.WaitPendingOptions) (*questions.Session, error) {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	sb := s.watch("")
	defer s.unwatch(sb)
	// The watch wakes on every write. Only a claim lapsing writes nothing: its terminal's exit is
	// watched, and a lease from elsewhere looked at again when it ends (see exitWatches).
	exits := lifecycle.NewExitWatches()
	defer exits.Close()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	for {
		all, err := s.List()
		var unreach *UnreachableError
		switch {
		case errors.As(err, &unreach) && !s.nc.IsClosed():
			recheck.Reset(time.Second)
		case err != nil:
			return nil, err
		}
		for _, sess := range all {
			if lifecycle.Offers(opts, sess) {
				return sess, nil
			}
		}
		if next := exits.Claims(all, s.now()); next >= 0 && err == nil {
			recheck.Reset(next)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-sb.C:
		case <-exits.Wake:
		case <-recheck.C:
		}
	}
}

// natsHub shares one watcher of the bucket among every wait of a NATSStore: a server waiting on a
// thousand sets holds one consumer, not a thousand.
type natsHub struct {
	kv        jetstream.KeyValue
	log       *slog.Logger
	mu        sync.Mutex
	subs      lifecycle.Subscribers // by set id ("" for every set)
	reconnect chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	// watching is true while a watcher runs, from its start (when it sees every later write) until
	// it ends; tests wait for it before they change what the watcher must survive.
	watching atomic.Bool
}

func newNATSHub(kv jetstream.KeyValue, log *slog.Logger) *natsHub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &natsHub{kv: kv, log: log, subs: lifecycle.Subscribers{}, reconnect: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go h.run()
	return h
}

// run keeps a watcher of new writes going. Every time one starts (first, or again after the
// connection came back), every subscriber is woken to re-read, which covers whatever was written
// while no watcher ran.
func (h *natsHub) run() {
	defer close(h.done)
	backoff := 100 * time.Millisecond
	for {
		w, err := h.kv.WatchAll(h.ctx, jetstream.UpdatesOnly())
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			h.log.Debug("cannot watch the question bucket yet", "error", err)
			select {
			case <-h.ctx.Done():
				return
			case <-h.reconnect:
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		h.watching.Store(true)
		h.notify("", true)
		h.serve(w)
		h.watching.Store(false)
		_ = w.Stop()
		go func() {
			for range w.Updates() { // let a callback blocked on the channel finish
			}
		}()
		if h.ctx.Err() != nil {
			return
		}
	}
}

// serve dispatches one watcher's updates until it ends, the connection comes back or the hub closes.
func (h *natsHub) serve(w jetstream.KeyWatcher) {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.reconnect:
			return // the consumer may not have survived: start a new one
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				h.notify(e.Key(), false)
			}
		}
	}
}

// notify wakes the subscribers of one set and those of every set; all wakes everyone.
func (h *natsHub) notify(key string, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if all {
		h.subs.WakeAll()
		return
	}
	h.subs.Wake(key)
	h.subs.Wake("")
}

func (h *natsHub) subscribe(key string) *lifecycle.Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, _ := h.subs.Add(key, make(chan struct{}, 1))
	return s
}

func (h *natsHub) Unsubscribe(s *lifecycle.Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs.Remove(s)
}

func (h *natsHub) Close() {
	h.cancel()
	<-h.done
}

// reconnected restarts the watcher after the connection came back.
func (s *Store) reconnected() {
	s.hubs.Do(func(h *natsHub) {
		select {
		case h.reconnect <- struct{}{}:
		default:
		}
	})
}

// watch subscribes to changes of one set ("" for any), starting the shared watcher if needed.
func (s *Store) watch(id string) *lifecycle.Sub {
	h := s.hubs.Use(func() *natsHub { return newNATSHub(s.kv, s.logger) })
	return h.subscribe(id)
}

func (s *Store) unwatch(sb *lifecycle.Sub) {
	s.hubs.Release(sb)
}
