package questions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// read loads one set as stored, without settling it.
func (s *NATSStore) read(id string) (*Session, error) {
	if !ValidID(id) {
		return nil, &InvalidIDError{ID: id}
	}
	if err := s.connected(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("question set %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, s.unreachable(err)
	}
	return s.decode(id, e), nil
}

// transition runs fn on the set's current state and writes what fn changed, if the set has not been
// written since it was read; otherwise it reads again and lets fn decide on the new state.
func (s *NATSStore) transition(id string, fn change) (*Session, error) {
	for {
		sess, err := s.read(id)
		if err != nil {
			return nil, err
		}
		if sess.Problem != "" {
			// A broken record is closed as it is: fn sees it abandoned and refuses any change.
			_, _, err := fn(sess)
			return sess, err
		}
		answers, write, err := fn(sess)
		if err != nil || !write {
			return sess, err
		}
		sess.Status.UpdatedAt = s.now().UTC()
		if answers != nil {
			sess.Answers = answers
		}
		data, err := encodeRecord(sess)
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
func (s *NATSStore) Create(set *QuestionSet, opts CreateOptions) (*Session, error) {
	sess := newSession(s.now, set, opts)
	data, err := encodeRecord(sess)
	if err != nil {
		return nil, err
	}
	if err := s.connected(); err != nil {
		return nil, fmt.Errorf("create question set: %w", err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	rev, err := s.kv.Create(ctx, sess.ID, data)
	if err != nil {
		return nil, fmt.Errorf("create question set: %w", s.unreachable(err))
	}
	sess.rev = rev
	return sess, nil
}

// reconcile settles what reading reveals (see ownersChange).
func (s *NATSStore) reconcile(sess *Session) (*Session, error) {
	if !needsOwnersCheck(sess, s.now()) {
		return sess, nil
	}
	return s.transition(sess.ID, ownersChange(s.now))
}

// Get loads one set by full id, settled.
func (s *NATSStore) Get(id string) (*Session, error) {
	sess, err := s.read(id)
	if err != nil {
		return nil, err
	}
	return s.reconcile(sess)
}

// listing is one pass over the bucket that several callers share.
type listing struct {
	done chan struct{}
	sets []*Session
	err  error
}

// all reads the latest record of every set. Concurrent callers share passes over the bucket: a caller
// joins the next pass to start (never one already running, which might miss what it just wrote), so
// a thousand calls asking at once cost a few passes, not a thousand.
func (s *NATSStore) all() ([]*Session, error) {
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
	out := make([]*Session, len(l.sets))
	for i, sess := range l.sets {
		c := *sess // each caller gets its own sessions to settle
		out[i] = &c
	}
	return out, nil
}

// runListing runs l, then the pass queued meanwhile, if any.
func (s *NATSStore) runListing(l *listing) {
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
func (s *NATSStore) pass() ([]*Session, error) {
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
	var out []*Session
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, s.unreachable(errors.New("the listing stopped early"))
			}
			if e == nil {
				return out, nil
			}
			if ValidID(e.Key()) {
				out = append(out, s.decode(e.Key(), e))
			}
		case <-ctx.Done():
			return nil, s.unreachable(ctx.Err())
		}
	}
}

// List returns every set, oldest first, each settled.
func (s *NATSStore) List() ([]*Session, error) {
	all, err := s.all()
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, sess := range all {
		settled, err := s.reconcile(sess)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // removed meanwhile
		case err != nil:
			return nil, err
		}
		out = append(out, settled)
	}
	sortSessions(out)
	return out, nil
}

// Resolve turns an id or unambiguous prefix into a full id.
func (s *NATSStore) Resolve(prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !validPrefix(p) {
		return "", &InvalidIDError{ID: prefix}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if ValidID(p) {
		if _, err := s.kv.Get(ctx, p); err == nil {
			return p, nil
		}
	}
	lister, err := s.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return "", fmt.Errorf("question set %q: %w", prefix, ErrNotFound)
	}
	if err != nil {
		return "", s.unreachable(err)
	}
	defer func() { _ = lister.Stop() }()
	var ids []string
	for k := range lister.Keys() {
		if ValidID(k) {
			ids = append(ids, k)
		}
	}
	return matchPrefix(prefix, p, ids)
}

// Answer records the person's answers (see FileStore.Answer).
func (s *NATSStore) Answer(id string, answers []Answer, claim string) (*Session, error) {
	return s.transition(id, answerChange(s.now, answers, claim))
}

// Reject closes the set as rejected, with an optional reason.
func (s *NATSStore) Reject(id, reason, claim string) (*Session, error) {
	reason, err := checkReason(reason)
	if err != nil {
		return nil, err
	}
	return s.transition(id, rejectChange(s.now, reason, claim))
}

// Claim marks a pending set as in progress in this terminal and returns the claim's token.
func (s *NATSStore) Claim(id string) (string, *Session, error) {
	token := uuid.NewString()
	sess, err := s.transition(id, claimChange(s.now, token))
	if err != nil {
		return "", nil, err
	}
	return token, sess, nil
}

// Release hands a claimed set back (pending).
func (s *NATSStore) Release(id, token string) error {
	_, err := s.transition(id, releaseChange(token))
	return err
}

// Abandon closes an open set as abandoned with a reason.
func (s *NATSStore) Abandon(id, reason string) (*Session, error) {
	return s.transition(id, abandonChange(reason))
}

// Detach records that the call waiting for the set went away (see detach.go).
func (s *NATSStore) Detach(id, reason string) (*Session, error) {
	return s.transition(id, detachChange(reason))
}

// Attach hands the set to a repeated call from this process (see detach.go).
func (s *NATSStore) Attach(id string, timeout time.Duration) (*Session, error) {
	return s.transition(id, attachChange(s.now, timeout))
}

// Cleanup removes finished sets last changed more than retention ago (the bucket's TTL removes them
// too; this keeps the same rule as the file store, for a shorter retention or an older bucket).
func (s *NATSStore) Cleanup(retention time.Duration) (int, error) {
	all, err := s.List()
	if err != nil {
		return 0, err
	}
	cutoff := s.now().Add(-retention)
	removed := 0
	var errs []error
	for _, sess := range all {
		if sess.Status.Status.Open() || !lastChange(sess).Before(cutoff) {
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
func (s *NATSStore) Ask(ctx context.Context, set *QuestionSet, opts AskOptions) (*Result, *Session, error) {
	return ask(ctx, s, &s.bg, set, opts)
}
