// Package natsstore is the questions store in a NATS JetStream key-value bucket
// (questions.store nats), shared by every machine that names the same server and installation. It
// is a package of its own so that only a binary that wires it in (natsstore.Open) links the NATS
// client.
package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Config says how to reach the NATS server and which bucket holds the question sets.
type Config struct {
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

var installationRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// CheckInstallation reports whether name can name a bucket.
func CheckInstallation(name string) error {
	if !installationRe().MatchString(name) {
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

// Store keeps question sets in a NATS JetStream key-value bucket, one key per set (its id) holding
// the request, the status and the answers as one JSON record. Every change is a compare-and-set on the
// key's revision, so of several machines answering at once exactly one wins; waits are woken by one
// key watcher per process, never by polling. After a dropped connection the client reconnects by
// itself, the watcher is started again and every wait re-reads its set, so an answer given meanwhile
// is not lost.
type Store struct {
	url, bucket string
	nc          *nats.Conn
	kv          jetstream.KeyValue
	ttl         time.Duration
	opTimeout   time.Duration
	now         func() time.Time
	logger      *slog.Logger
	bg          lifecycle.Background

	hubs lifecycle.SharedHub[*natsHub] // started by the first wait, stopped when the last one ends

	lifecycle.Transitions // Answer, Reject, Claim, Release, Abandon: through transition

	lmu             sync.Mutex
	running, queued *listing // the pass over the bucket under way, and the next one callers joined
}

// set is a session as this store reads it, with the revision of its key it was read at.
type set struct {
	*questions.Session
	rev uint64
}

// Held is the set's session (lifecycle.Sessions).
func (s *set) Held() *questions.Session { return s.Session }

// session is the set's session, nil for no set.
func (s *set) session() *questions.Session {
	if s == nil {
		return nil
	}
	return s.Session
}

// record is the value stored under a set's key.
type record struct {
	Request *questions.Request `json:"request"`
	Status  questions.Status   `json:"status"`
	Answers *questions.Answers `json:"answers,omitempty"`
}

// New connects to the server and opens the installation's bucket, creating it when missing.
// A server that cannot be reached, or that has no JetStream, is an *UnreachableError naming the URL;
// nothing falls back to files.
func New(cfg Config, opts questions.Options) (*Store, error) {
	if cfg.URL == "" {
		return nil, errors.New("questions.nats_url is empty: name the NATS server (nats://host:4222)")
	}
	if err := CheckInstallation(cfg.Installation); err != nil {
		return nil, err
	}
	s := &Store{url: cfg.URL, bucket: BucketPrefix + cfg.Installation, opTimeout: cfg.OpTimeout, now: opts.Now, logger: opts.Logger}
	s.Transitions = lifecycle.NewTransitions(func() time.Time { return s.now() }, s.transition)
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
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("questions.nats_tls_cert and questions.nats_tls_key go together: set both or neither")
	}
	if err := checkNATSFiles(cfg); err != nil {
		return nil, err
	}
	if cfg.Creds != "" {
		nopts = append(nopts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.Token != "" {
		nopts = append(nopts, nats.Token(cfg.Token))
	}
	if cfg.TLSCert != "" {
		nopts = append(nopts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.TLSCA != "" {
		nopts = append(nopts, nats.RootCAs(cfg.TLSCA))
	}
	nc, err := nats.Connect(cfg.URL, nopts...)
	if err != nil {
		return nil, &UnreachableError{URL: cfg.URL, Err: fmt.Errorf("cannot connect (questions.store is nats; nothing falls back to files): %w%s", err, authHint(err, cfg))}
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

// checkNATSFiles looks at the credentials and TLS files before connecting, so that a file missing
// here is named with its setting instead of surfacing as the server's fault (the client library
// reports it as a failed connection). The check is the one `settings set` warns with.
func checkNATSFiles(cfg Config) error {
	for _, f := range []struct {
		key  config.Setting[string]
		path string
	}{
		{config.QuestionsNATSCreds, cfg.Creds},
		{config.QuestionsNATSTLSCert, cfg.TLSCert},
		{config.QuestionsNATSTLSKey, cfg.TLSKey},
		{config.QuestionsNATSTLSCA, cfg.TLSCA},
	} {
		if p := f.key.Key().FileProblem(f.path); p != "" {
			return errors.New(p)
		}
	}
	return nil
}

// Location names the server and the bucket.
func (s *Store) Location() string { return fmt.Sprintf("%s (bucket %s)", s.url, s.bucket) }

// Bucket is the key-value bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Close joins a background cleanup, stops the watcher and closes the connection.
func (s *Store) Close() error {
	s.bg.Wait()
	s.hubs.Close()
	if s.nc != nil {
		s.nc.Close()
	}
	return nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opTimeout)
}

// unreachable wraps an error of the client that is not about the data (a drop, a timeout, JetStream
// not answering) so callers can tell it from a missing set or a lost race.
func (s *Store) unreachable(err error) error {
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
func (s *Store) connected() error {
	if s.nc.IsReconnecting() {
		return &UnreachableError{URL: s.url, Err: errReconnecting}
	}
	return nil
}

func encodeRecord(sess *questions.Session) ([]byte, error) {
	return json.Marshal(record{Request: sess.Request, Status: sess.Status, Answers: sess.Answers})
}

// decode turns a stored record into a session. A record that does not parse or does not hold together
// is shown as abandoned, with why, and left as it is for inspection (it is never rewritten).
func (s *Store) decode(id string, e jetstream.KeyValueEntry) *set {
	sess := &set{Session: &questions.Session{ID: id}, rev: e.Revision()}
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
			if _, err := questions.QuestionSetFrom(lifecycle.RoundTrip(rec.Request.Questions)); err != nil {
				problems = append(problems, fmt.Sprintf("request: %v", err))
			} else {
				sess.Request = rec.Request
			}
		}
		if !lifecycle.KnownState(rec.Status.Status) {
			problems = append(problems, fmt.Sprintf("status: unknown status %q", rec.Status.Status))
		}
		if rec.Answers != nil && sess.Request != nil {
			if err := lifecycle.CheckStored(sess.Session, rec.Answers); err != nil {
				problems = append(problems, fmt.Sprintf("answers: %v", err))
			} else {
				sess.Answers = rec.Answers
			}
		}
		if rec.Status.Status == questions.Completed && sess.Answers == nil && len(problems) == 0 {
			problems = append(problems, "completed without answers")
		}
	}
	lifecycle.FillStatus(sess.Session, id, e.Created().UTC())
	if len(problems) > 0 {
		sess.Problem = strings.Join(problems, "; ")
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = questions.Abandoned, nil, sess.Problem
		sess.Status.UpdatedAt = e.Created().UTC()
		sess.Answers = nil
	}
	return sess
}

// authHint names the settings that carry the credentials when the server refused them, and which
// of them were given: the server's "authorization violation" says nothing of where they come from.
func authHint(err error, cfg Config) string {
	if !errors.Is(err, nats.ErrAuthorization) && !errors.Is(err, nats.ErrAuthExpired) && !errors.Is(err, nats.ErrAuthRevoked) {
		return ""
	}
	var given []string
	if cfg.Token != "" {
		given = append(given, config.QuestionsNATSToken.Name)
	}
	if cfg.Creds != "" {
		given = append(given, config.QuestionsNATSCreds.Name)
	}
	if cfg.TLSCert != "" {
		given = append(given, config.QuestionsNATSTLSCert.Name)
	}
	if len(given) == 0 {
		return fmt.Sprintf("; the server wants credentials and none were given: set %s or %s "+
			"(qkit settings set, or QKIT_QUESTIONS_NATS_TOKEN / QKIT_QUESTIONS_NATS_CREDS)", config.QuestionsNATSToken.Name, config.QuestionsNATSCreds.Name)
	}
	return fmt.Sprintf("; the server refused %s: check its value (qkit settings get), or set %s or %s to what the server expects",
		strings.Join(given, " and "), config.QuestionsNATSToken.Name, config.QuestionsNATSCreds.Name)
}
