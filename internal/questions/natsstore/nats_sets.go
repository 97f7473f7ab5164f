package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// read loads one set as stored, without settling it.
func (s *Store) read(id string) (*set, error) {
	if !questions.ValidID(id) {
		return nil, &questions.InvalidIDError{ID: id}
	}
	if err := s.connected(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("question set %s: %w", id, questions.ErrNotFound)
	}
	if err != nil {
		return nil, s.unreachable(err)
	}
	return s.decode(id, e), nil
}

// transition runs fn on the set's current state and writes what fn changed, if the set has not been
// written since it was read; otherwise it reads again and lets fn decide on the new state.
func (s *Store) transition(id string, fn lifecycle.Change) (*questions.Session, error) {
	sess, err := s.change(id, fn)
	return sess.session(), err
}

// change is transition, returning the set with the revision it was written at.
func (s *Store) change(id string, fn lifecycle.Change) (*set, error) {
	for {
		sess, err := s.read(id)
		if err != nil {
			return nil, err
		}
		if sess.Problem != "" {
			// A broken record is closed as it is: fn sees it abandoned and refuses any change.
			_, _, err := fn(sess.Session)
			return sess, err
		}
		answers, write, err := fn(sess.Session)
		if err != nil || !write {
			return sess, err
		}
		sess.Status.UpdatedAt = s.now().UTC()
		if answers != nil {
			sess.Answers = answers
		}
		data, err := encodeRecord(sess.Session)
		if err != nil {
			return nil, err
		}
		ctx, cancel := s.ctx()
		rev, err := s.kv.Update(ctx, id, data, sess.rev)
		cancel()
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue // changed meanwhile (perhaps by another machine): decide again
		}
		if err != nil {
			return nil, s.unreachable(err)
		}
		sess.rev = rev
		return sess, nil
	}
}

// Create stores a new pending set.
func (s *Store) Create(set *questions.QuestionSet, opts questions.CreateOptions) (*questions.Session, error) {
	sess := lifecycle.NewSession(s.now, set, opts)
	data, err := encodeRecord(sess)
	if err != nil {
		return nil, err
	}
	if err := s.connected(); err != nil {
		return nil, fmt.Errorf("create question set: %w", err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.kv.Create(ctx, sess.ID, data); err != nil {
		return nil, fmt.Errorf("create question set: %w", s.unreachable(err))
	}
	return sess, nil
}

// reconcile settles what reading reveals (see ownersChange).
func (s *Store) reconcile(sess *set) (*set, error) {
	if !lifecycle.NeedsOwnersCheck(sess.Session, s.now()) {
		return sess, nil
	}
	return s.change(sess.ID, lifecycle.OwnersChange(s.now))
}

// Get loads one set by full id, settled.
func (s *Store) Get(id string) (*questions.Session, error) {
	sess, err := s.read(id)
	if err == nil {
		sess, err = s.reconcile(sess)
	}
	if err != nil {
		return nil, err
	}
	return sess.Session, nil
}

// listing is one pass over the bucket that several callers share.
type listing struct {
	done chan struct{}
	sets []*set
	err  error
}

// all reads the latest record of every set. Concurrent callers share passes over the bucket: a caller
// joins the next pass to start (never one already running, which might miss what it just wrote), so
// a thousand calls asking at once cost a few passes, not a thousand.
func (s *Store) all() ([]*set, error) {
	s.lmu.Lock()
	l := s.queued
	if l == nil {
		l = &listing{done: make(chan struct{})}
		if s.running == nil {
			s.running = l
			s.lmu.Unlock()
			s.runListing(l)
		} else {
			s.queued = l
			s.lmu.Unlock()
		}
	} else {
		s.lmu.Unlock()
	}
	<-l.done
	if l.err != nil {
		return nil, l.err
	}
	out := make([]*set, len(l.sets))
	for i, sess := range l.sets {
		c := *sess.Session // each caller gets its own sessions to settle
		out[i] = &set{Session: &c, rev: sess.rev}
	}
	return out, nil
}

// runListing runs l, then the pass queued meanwhile, if any.
func (s *Store) runListing(l *listing) {
	for l != nil {
		l.sets, l.err = s.pass()
		s.lmu.Lock()
		close(l.done)
		l, s.queued = s.queued, nil
		s.running = l
		s.lmu.Unlock()
	}
}

// pass reads the latest record of every set in one watch over the bucket.
func (s *Store) pass() ([]*set, error) {
	if err := s.connected(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, s.unreachable(err)
	}
	defer func() { _ = w.Stop() }()
	var out []*set
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, s.unreachable(errors.New("the listing stopped early"))
			}
			if e == nil {
				return out, nil
			}
			if questions.ValidID(e.Key()) {
				out = append(out, s.decode(e.Key(), e))
			}
		case <-ctx.Done():
			return nil, s.unreachable(ctx.Err())
		}
	}
}

// List returns every set, oldest first, each settled.
func (s *Store) List() ([]*questions.Session, error) {
	return lifecycle.Sessions(s.list())
}

// list is List with the revision each set was read at.
func (s *Store) list() ([]*set, error) {
	all, err := s.all()
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, sess := range all {
		settled, err := s.reconcile(sess)
		switch {
		case errors.Is(err, questions.ErrNotFound):
			continue // removed meanwhile
		case err != nil:
			return nil, err
		}
		out = append(out, settled)
	}
	lifecycle.SortSessions(out, (*set).session)
	return out, nil
}

// Resolve turns an id or unambiguous prefix into a full id.
func (s *Store) Resolve(prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !lifecycle.ValidPrefix(p) {
		return "", &questions.InvalidIDError{ID: prefix}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if questions.ValidID(p) {
		if _, err := s.kv.Get(ctx, p); err == nil {
			return p, nil
		}
	}
	lister, err := s.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return "", fmt.Errorf("question set %q: %w", prefix, questions.ErrNotFound)
	}
	if err != nil {
		return "", s.unreachable(err)
	}
	defer func() { _ = lister.Stop() }()
	var ids []string
	for k := range lister.Keys() {
		if questions.ValidID(k) {
			ids = append(ids, k)
		}
	}
	return lifecycle.MatchPrefix(prefix, p, ids)
}

// Detach records that the call waiting for the set went away (see detach.go).
func (s *Store) Detach(id, reason string) (*questions.Session, error) {
	return s.transition(id, lifecycle.DetachChange(reason))
}

// Attach hands the set to a repeated call from this process (see detach.go).
func (s *Store) Attach(id string, timeout time.Duration) (*questions.Session, error) {
	return s.transition(id, lifecycle.AttachChange(s.now, timeout))
}

// Cleanup removes finished sets last changed more than retention ago (the bucket's TTL removes them
// too; this keeps the same rule as the file store, for a shorter retention or an older bucket).
func (s *Store) Cleanup(retention time.Duration) (int, error) {
	all, err := s.list()
	if err != nil {
		return 0, err
	}
	cutoff := s.now().Add(-retention)
	removed := 0
	var errs []error
	for _, sess := range all {
		if sess.Status.Status.Open() || !lifecycle.LastChange(sess.Session).Before(cutoff) {
			continue
		}
		ctx, cancel := s.ctx()
		err := s.kv.Purge(ctx, sess.ID, jetstream.LastRevision(sess.rev))
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists):
			// changed meanwhile: not removed
		case err != nil:
			errs = append(errs, s.unreachable(err))
		default:
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// Ask is the whole flow of one question (see Store).
func (s *Store) Ask(ctx context.Context, set *questions.QuestionSet, opts questions.AskOptions) (*questions.Result, *questions.Session, error) {
	return lifecycle.Ask(ctx, s, &s.bg, set, opts)
}
