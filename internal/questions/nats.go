package questions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSConfig says how to reach the NATS server and which bucket holds the question sets.
type NATSConfig struct {
	// URL is the server (questions.nats_url); a comma-separated list names several of one cluster.
	URL string
	// Creds is a credentials file (JWT and NKey seed), Token a bearer token.
	Creds, Token string
	// TLSCert and TLSKey are a client certificate; TLSCA is the CA file that signs the server's.
	TLSCert, TLSKey, TLSCA string
	// Installation names the bucket (qkit-questions-<installation>): qkit installations with the same
	// name and server share their question sets.
	Installation string
	// Retention is the bucket's TTL when qkit creates it: a set not written for this long is removed
	// by the server. A waiting asker rewrites its open set well within it.
	Retention time.Duration
	// ConnectTimeout bounds the first connection (default 3s); OpTimeout each read or write (5s).
	ConnectTimeout, OpTimeout time.Duration
	// ReconnectWait is the pause between reconnection attempts after a drop (default 500ms).
	ReconnectWait time.Duration
}

// BucketPrefix starts the name of every bucket qkit creates.
const BucketPrefix = "qkit-questions-"

var installationRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckInstallation reports whether name can name a bucket.
func CheckInstallation(name string) error {
	if !installationRe.MatchString(name) {
		return fmt.Errorf("installation name %q: use 1 to 64 letters, digits, '-' or '_'", name)
	}
	return nil
}

// UnreachableError is a NATS server that cannot be reached or does not answer for JetStream.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the NATS server at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// NATSStore keeps question sets in a NATS JetStream key-value bucket, one key per set (its id) holding
// the request, the status and the answers as one JSON record. Every change is a compare-and-set on the
// key's revision, so of several machines answering at once exactly one wins; waits are woken by one
// key watcher per process, never by polling. After a dropped connection the client reconnects by
// itself, the watcher is started again and every wait re-reads its set, so an answer given meanwhile
// is not lost.
type NATSStore struct {
	url, bucket string
	nc          *nats.Conn
	kv          jetstream.KeyValue
	ttl         time.Duration
	opTimeout   time.Duration
	now         func() time.Time
	logger      *slog.Logger
	bg          background

	mu    sync.Mutex
	hub   *natsHub // started by the first wait, stopped when the last one ends
	users int

	lmu             sync.Mutex
	running, queued *listing // the pass over the bucket under way, and the next one callers joined
}

// record is the value stored under a set's key.
type record struct {
	Request *Request `json:"request"`
	Status  Status   `json:"status"`
	Answers *Answers `json:"answers,omitempty"`
}

// NewNATSStore connects to the server and opens the installation's bucket, creating it when missing.
// A server that cannot be reached, or that has no JetStream, is an *UnreachableError naming the URL;
// nothing falls back to files.
func NewNATSStore(cfg NATSConfig, opts Options) (*NATSStore, error) {
	if cfg.URL == "" {
		return nil, errors.New("questions.nats_url is empty: name the NATS server (nats://host:4222)")
	}
	if err := CheckInstallation(cfg.Installation); err != nil {
		return nil, err
	}
	s := &NATSStore{url: cfg.URL, bucket: BucketPrefix + cfg.Installation, opTimeout: cfg.OpTimeout, now: opts.Now, logger: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.opTimeout <= 0 {
		s.opTimeout = 5 * time.Second
	}
	connectTimeout, reconnectWait := cfg.ConnectTimeout, cfg.ReconnectWait
	if connectTimeout <= 0 {
		connectTimeout = 3 * time.Second
	}
	if reconnectWait <= 0 {
		reconnectWait = 500 * time.Millisecond
	}
	nopts := []nats.Option{
		nats.Name("qkit questions"),
		nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.PingInterval(20 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.logger.Warn("lost the NATS server; reconnecting", "url", s.url, "error", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			s.logger.Info("reconnected to the NATS server", "url", s.url)
			s.reconnected()
		}),
	}
	if cfg.Creds != "" {
		nopts = append(nopts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.Token != "" {
		nopts = append(nopts, nats.Token(cfg.Token))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		if cfg.TLSCert == "" || cfg.TLSKey == "" {
			return nil, errors.New("questions.nats_tls_cert and questions.nats_tls_key go together: set both or neither")
		}
		nopts = append(nopts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.TLSCA != "" {
		nopts = append(nopts, nats.RootCAs(cfg.TLSCA))
	}
	nc, err := nats.Connect(cfg.URL, nopts...)
	if err != nil {
		return nil, &UnreachableError{URL: cfg.URL, Err: fmt.Errorf("cannot connect (questions.store is nats; nothing falls back to files): %w", err)}
	}
	s.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, &UnreachableError{URL: cfg.URL, Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	kv, err := js.KeyValue(ctx, s.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      s.bucket,
			Description: "qkit question sets (ask_user_questions) of the installation " + cfg.Installation,
			History:     1,
			TTL:         cfg.Retention,
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			kv, err = js.KeyValue(ctx, s.bucket) // another machine created it meanwhile
		}
	}
	if err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			err = fmt.Errorf("JetStream is not enabled there (start nats-server with -js): %w", err)
		}
		return nil, &UnreachableError{URL: cfg.URL, Err: fmt.Errorf("open bucket %s: %w", s.bucket, err)}
	}
	s.kv = kv
	s.ttl = cfg.Retention
	if st, err := kv.Status(ctx); err == nil {
		s.ttl = st.TTL()
		if cfg.Retention > 0 && st.TTL() != cfg.Retention {
			s.logger.Warn("the NATS bucket keeps question sets for a different time than questions.retention; the bucket's TTL applies",
				"bucket", s.bucket, "ttl", st.TTL(), "retention", cfg.Retention)
		}
	}
	return s, nil
}

// Location names the server and the bucket.
func (s *NATSStore) Location() string { return fmt.Sprintf("%s (bucket %s)", s.url, s.bucket) }

// Bucket is the key-value bucket's name.
func (s *NATSStore) Bucket() string { return s.bucket }

// Close joins a background cleanup, stops the watcher and closes the connection.
func (s *NATSStore) Close() error {
	s.bg.wait()
	s.mu.Lock()
	if s.hub != nil {
		s.hub.close()
		s.hub, s.users = nil, 0
	}
	s.mu.Unlock()
	if s.nc != nil {
		s.nc.Close()
	}
	return nil
}

func (s *NATSStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opTimeout)
}

// unreachable wraps an error of the client that is not about the data (a drop, a timeout, JetStream
// not answering) so callers can tell it from a missing set or a lost race.
func (s *NATSStore) unreachable(err error) error {
	if err == nil {
		return nil
	}
	var u *UnreachableError
	if errors.As(err, &u) {
		return err
	}
	return &UnreachableError{URL: s.url, Err: err}
}

// errReconnecting: the connection dropped and the client is reconnecting; reads and writes fail at
// once instead of blocking until their timeout, so a wait's own deadline and cancellation still act.
var errReconnecting = errors.New("connection lost, reconnecting")

// connected fails fast while the client is reconnecting.
func (s *NATSStore) connected() error {
	if s.nc.IsReconnecting() {
		return &UnreachableError{URL: s.url, Err: errReconnecting}
	}
	return nil
}

func encodeRecord(sess *Session) ([]byte, error) {
	return json.Marshal(record{Request: sess.Request, Status: sess.Status, Answers: sess.Answers})
}

// decode turns a stored record into a session. A record that does not parse or does not hold together
// is shown as abandoned, with why, and left as it is for inspection (it is never rewritten).
func (s *NATSStore) decode(id string, e jetstream.KeyValueEntry) *Session {
	sess := &Session{ID: id, rev: e.Revision()}
	var rec record
	var problems []string
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		problems = append(problems, fmt.Sprintf("the stored record is malformed: %v", err))
	} else {
		sess.Status = rec.Status
		switch {
		case rec.Request == nil:
			problems = append(problems, "the stored record has no request")
		case rec.Request.SessionID != id:
			problems = append(problems, fmt.Sprintf("request: sessionId %q does not match the key", rec.Request.SessionID))
		default:
			if _, err := QuestionSetFrom(roundTrip(rec.Request.Questions)); err != nil {
				problems = append(problems, fmt.Sprintf("request: %v", err))
			} else {
				sess.Request = rec.Request
			}
		}
		if !knownState(rec.Status.Status) {
			problems = append(problems, fmt.Sprintf("status: unknown status %q", rec.Status.Status))
		}
		if rec.Answers != nil && sess.Request != nil {
			if _, err := CheckAnswers(sess.Set(), rec.Answers.Answers); err != nil {
				problems = append(problems, fmt.Sprintf("answers: %v", err))
			} else {
				sess.Answers = rec.Answers
			}
		}
		if rec.Status.Status == Completed && sess.Answers == nil && len(problems) == 0 {
			problems = append(problems, "completed without answers")
		}
	}
	sess.Status.SessionID = id
	if sess.Request != nil {
		sess.Status.CallID = sess.Request.CallID
		sess.Status.TotalQuestions = len(sess.Request.Questions)
		if sess.Status.CreatedAt.IsZero() {
			sess.Status.CreatedAt = sess.Request.CreatedAt
		}
	}
	if sess.Status.CreatedAt.IsZero() {
		sess.Status.CreatedAt = e.Created().UTC()
	}
	if len(problems) > 0 {
		sess.Problem = strings.Join(problems, "; ")
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = Abandoned, nil, sess.Problem
		sess.Status.UpdatedAt = e.Created().UTC()
		sess.Answers = nil
	}
	return sess
}

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
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		return nil, detach(sess, reason), nil
	})
}

// Attach hands the set to a repeated call from this process (see detach.go).
func (s *NATSStore) Attach(id string, timeout time.Duration) (*Session, error) {
	return s.transition(id, func(sess *Session) (*Answers, bool, error) {
		if !attach(sess, Self(), s.now().UTC(), timeout) {
			return nil, false, &ClosedError{ID: sess.ID, Status: sess.Status.Status, Reason: "no longer waiting for a repeated call"}
		}
		return nil, true, nil
	})
}

// touch rewrites an open set unchanged, so the bucket's TTL does not remove a set someone still waits
// for. The revision changes; nothing else does.
func (s *NATSStore) touch(id string) error {
	_, err := s.transition(id, func(sess *Session) (*Answers, bool, error) {
		return nil, sess.Status.Status.Open(), nil
	})
	return err
}

// Wait blocks until the set is answered or rejected, or ends without an answer (see Store). It is
// woken by the bucket's watcher; while the server is away it keeps waiting (the timeout still
// applies) and re-reads the set once the connection is back.
func (s *NATSStore) Wait(ctx context.Context, id string, opts WaitOptions) (*Session, error) {
	sb := s.watch(id)
	defer s.unwatch(sb)
	var deadline <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	var progress <-chan time.Time
	if opts.Progress != nil {
		every := opts.ProgressEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		progress = t.C
	}
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
			if done, err := outcome(sess); done {
				if err != nil {
					return nil, err
				}
				return sess, nil
			}
			if expired {
				_, terr := s.transition(id, expireChange(opts.Timeout))
				switch {
				case terr == nil:
					continue // read again: an answer that won the race is still returned
				case errors.Is(terr, ErrNotFound):
					return nil, terr
				}
				err = terr
			}
		}
		if expired && err != nil {
			// The server is away at the deadline: end the wait anyway, saying the set could not be
			// marked (it stays open in the bucket until someone answers it or the TTL removes it).
			return nil, &EndedError{ID: id, Status: TimedOut, Reason: fmt.Sprintf("no answer within %s; %v, so the set could not be marked timed_out", opts.Timeout, err)}
		}
		select {
		case <-ctx.Done():
			reason := opts.CancelReason
			if reason == "" {
				reason = "the caller cancelled the wait"
			}
			end, what := s.Abandon, "abandoned"
			if opts.Detach {
				end, what = s.Detach, "detached"
			}
			if _, err := end(id, reason); err != nil {
				s.logger.Warn("could not mark question set "+what, "sessionId", id, "error", err)
			}
			return nil, ctx.Err()
		case <-deadline:
			expired = true
		case <-sb.c:
		case <-retry.C:
		case <-refresh:
			if err := s.touch(id); err != nil && !errors.Is(err, ErrNotFound) {
				s.logger.Warn("could not refresh the open question set", "sessionId", id, "error", err)
			}
		case <-progress:
			opts.Progress(time.Since(start))
		}
	}
}

// WaitPending blocks until an open, unclaimed set exists and returns the oldest one.
func (s *NATSStore) WaitPending(ctx context.Context, opts WaitPendingOptions) (*Session, error) {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	sb := s.watch("")
	defer s.unwatch(sb)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	// A claim whose terminal died is only seen by reading: re-read now and then, as the file store does.
	lapse := time.NewTicker(2 * time.Second)
	defer lapse.Stop()
	for {
		all, err := s.List()
		var unreach *UnreachableError
		switch {
		case errors.As(err, &unreach) && !s.nc.IsClosed():
			retry.Reset(time.Second)
		case err != nil:
			return nil, err
		}
		for _, sess := range all {
			if (sess.Status.Status == Pending || sess.Status.Status == Detached) && sess.Request != nil && (opts.Skip == nil || !opts.Skip(sess.ID)) {
				return sess, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-sb.c:
		case <-retry.C:
		case <-lapse.C:
		}
	}
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

// natsHub shares one watcher of the bucket among every wait of a NATSStore: a server waiting on a
// thousand sets holds one consumer, not a thousand.
type natsHub struct {
	kv        jetstream.KeyValue
	log       *slog.Logger
	mu        sync.Mutex
	subs      map[string]map[*sub]struct{} // set id ("" for every set) -> subscribers
	reconnect chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
}

func newNATSHub(kv jetstream.KeyValue, log *slog.Logger) *natsHub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &natsHub{kv: kv, log: log, subs: map[string]map[*sub]struct{}{}, reconnect: make(chan struct{}, 1),
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
		h.notify("", true)
		h.serve(w)
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
	wake := func(m map[*sub]struct{}) {
		for s := range m {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
	if all {
		for _, m := range h.subs {
			wake(m)
		}
		return
	}
	wake(h.subs[key])
	wake(h.subs[""])
}

func (h *natsHub) subscribe(key string) *sub {
	s := &sub{dir: key, c: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[key]
	if m == nil {
		m = map[*sub]struct{}{}
		h.subs[key] = m
	}
	m[s] = struct{}{}
	return s
}

func (h *natsHub) unsubscribe(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[s.dir], s)
	if len(h.subs[s.dir]) == 0 {
		delete(h.subs, s.dir)
	}
}

func (h *natsHub) close() {
	h.cancel()
	<-h.done
}

// reconnected restarts the watcher after the connection came back.
func (s *NATSStore) reconnected() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub != nil {
		select {
		case s.hub.reconnect <- struct{}{}:
		default:
		}
	}
}

// watch subscribes to changes of one set ("" for any), starting the shared watcher if needed.
func (s *NATSStore) watch(id string) *sub {
	s.mu.Lock()
	if s.hub == nil {
		s.hub = newNATSHub(s.kv, s.logger)
	}
	h := s.hub
	s.users++
	s.mu.Unlock()
	return h.subscribe(id)
}

func (s *NATSStore) unwatch(sb *sub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil {
		return
	}
	s.hub.unsubscribe(sb)
	if s.users--; s.users == 0 {
		s.hub.close()
		s.hub = nil
	}
}

// sortSessions orders sets oldest first (by id among equals).
func sortSessions(out []*Session) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Status.CreatedAt, out[j].Status.CreatedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].ID < out[j].ID
	})
}

// lastChange is when a set last changed, for the retention rule.
func lastChange(sess *Session) time.Time {
	last := sess.Status.UpdatedAt
	if last.IsZero() || sess.Status.CreatedAt.After(last) {
		last = sess.Status.CreatedAt
	}
	return last
}
