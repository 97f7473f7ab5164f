package questions

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/config"
)

// Store is where question sets wait for the person. Everything above the core (the MCP tool, the
// `qkit questions` commands, the web page, approvals from the ACP backend) holds a Store and never
// knows which one: the files under the state folder (FileStore, the default) or a key-value bucket
// shared by several machines. Open picks the one the settings name.
//
// Every implementation keeps these semantics, and the one store test suite checks them on each:
//
//   - Create stores a new pending set under a fresh UUID; no reader ever sees half of one.
//   - Resolve takes a full id or any unambiguous prefix (InvalidIDError for text that is not UUID hex,
//     ErrNotFound, AmbiguousError). Get reads one set; List returns every set, oldest first. Both
//     settle what reading reveals (an owner known to have exited abandons its open set; a claim whose
//     terminal has gone lapses back to pending), and one unreadable set never hides the others.
//   - Answer, Reject, a timeout and an abandonment race for an open set (pending or in-progress):
//     exactly one wins, once, everywhere; the losers get a *ClosedError naming the status that won.
//     Answers are checked against the set (CheckAnswers) before they can win.
//   - Claim marks a set in-progress for one terminal and returns its token; a change with another
//     live claim's token gets ErrClaimed, a change with no token ("" — a script) is allowed. Release
//     hands a claimed set back as pending.
//   - Wait blocks without polling until the set is answered or rejected (returned), or ends without
//     an answer: timed out after WaitOptions.Timeout (the set becomes timed_out, unless an answer won
//     the race), abandoned (an *EndedError), or gone (removed: ErrNotFound). A cancelled ctx marks
//     the set abandoned with WaitOptions.CancelReason and returns ctx's error.
//   - A detachable set (the MCP tool's) outlives its call: a cancelled wait with WaitOptions.Detach,
//     or a waiter known to have exited, leaves it detached (open, still answerable) instead of
//     abandoned; Attach hands it to a repeated call, or hands over an outcome no call collected,
//     once. A detached set past its expiry reads as timed_out. The rules are in detach.go.
//   - WaitPending blocks until an open, unclaimed set exists (pending or detached) and returns the
//     oldest.
//   - Cleanup removes finished sets (completed, rejected, timed_out, abandoned) last changed more than
//     retention ago, never an open one, and reports how many it removed.
//   - Ask is the whole flow of one question (cleanup in the background, Create, Wait, logs), the same
//     on every store; Close joins that cleanup and releases the store.
//
// Errors are the package's own (ErrNotFound, ErrClaimed, *ClosedError, *EndedError, *InvalidIDError,
// *AmbiguousError, *ValidationError), so callers map them to exit codes the same way for any store.
type Store interface {
	Create(set *QuestionSet, opts CreateOptions) (*Session, error)
	Resolve(prefix string) (string, error)
	Get(id string) (*Session, error)
	List() ([]*Session, error)
	Answer(id string, answers []Answer, claim string) (*Session, error)
	Reject(id, reason, claim string) (*Session, error)
	Claim(id string) (token string, sess *Session, err error)
	Release(id, token string) error
	Abandon(id, reason string) (*Session, error)
	// Detach and Attach: see detach.go. Each applies detach/attach to the set under its lock.
	Detach(id, reason string) (*Session, error)
	Attach(id string, timeout time.Duration) (*Session, error)
	Wait(ctx context.Context, id string, opts WaitOptions) (*Session, error)
	WaitPending(ctx context.Context, opts WaitPendingOptions) (*Session, error)
	Cleanup(retention time.Duration) (int, error)
	// Changes wakes its channel (coalesced) whenever a set is created, changes or goes, until ctx
	// ends, without polling where the store has events (see changes.go); for live pages.
	Changes(ctx context.Context) (<-chan struct{}, error)
	Ask(ctx context.Context, set *QuestionSet, opts AskOptions) (*Result, *Session, error)
	// Location says where the sets live, for messages: a folder, or a server and bucket.
	Location() string
	Close() error
}

var (
	_ Store = (*FileStore)(nil)
	_ Store = (*NATSStore)(nil)
)

// Open opens the store qkit's settings choose (questions.store): the files under <state>/questions, or
// the NATS bucket of questions.installation on questions.nats_url. A NATS server that cannot be
// reached is an error naming the URL; Open never falls back to files.
func Open(cfg *config.Config, opts Options) (Store, error) {
	switch kind := config.QuestionsStore.Get(cfg); kind {
	case "file":
		return NewFileStore(filepath.Join(cfg.Paths.State, "questions"), opts)
	case "nats":
		return NewNATSStore(NATSConfigFrom(cfg), opts)
	default:
		return nil, fmt.Errorf("questions.store %q: expected file or nats", kind)
	}
}

// NATSConfigFrom reads the questions.nats_* settings.
func NATSConfigFrom(cfg *config.Config) NATSConfig {
	return NATSConfig{
		URL:          config.QuestionsNATSURL.Get(cfg),
		Creds:        config.QuestionsNATSCreds.Get(cfg),
		Token:        config.QuestionsNATSToken.Get(cfg),
		TLSCert:      config.QuestionsNATSTLSCert.Get(cfg),
		TLSKey:       config.QuestionsNATSTLSKey.Get(cfg),
		TLSCA:        config.QuestionsNATSTLSCA.Get(cfg),
		Installation: config.QuestionsInstallation.Get(cfg),
		Retention:    config.QuestionsRetention.Get(cfg),
	}
}

// Location is the folder that holds the sessions.
func (s *FileStore) Location() string { return s.dir }

// waitClocks are the channels of a Wait's deadline (opts.Timeout) and progress reports
// (opts.ProgressEvery, 10 s by default), each nil when not asked for; stop releases them. Both
// stores' Wait use them.
func waitClocks(opts WaitOptions) (deadline, progress <-chan time.Time, stop func()) {
	var timer *time.Timer
	var ticker *time.Ticker
	if opts.Timeout > 0 {
		timer = time.NewTimer(opts.Timeout)
		deadline = timer.C
	}
	if opts.Progress != nil {
		every := opts.ProgressEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		ticker = time.NewTicker(every)
		progress = ticker.C
	}
	return deadline, progress, func() {
		if timer != nil {
			timer.Stop()
		}
		if ticker != nil {
			ticker.Stop()
		}
	}
}

// endCancelledWait ends set id of st after its waiter's caller went away: abandoned, or detached
// (answerable by a repeated call) with opts.Detach, with opts.CancelReason. Both stores' Wait use
// it.
func endCancelledWait(st Store, logger *slog.Logger, id string, opts WaitOptions) {
	reason := opts.CancelReason
	if reason == "" {
		reason = "the caller cancelled the wait"
	}
	end, what := st.Abandon, "abandoned"
	if opts.Detach {
		end, what = st.Detach, "detached"
	}
	if _, err := end(id, reason); err != nil {
		logger.Warn("could not mark question set "+what, "sessionId", id, "error", err)
	}
}

// fillStatus completes a set's status as both stores read it: its id, and from its request the
// call id, the number of questions and the time it was asked (created when neither says).
func (sess *Session) fillStatus(id string, created time.Time) {
	sess.Status.SessionID = id
	if sess.Request != nil {
		sess.Status.CallID = sess.Request.CallID
		sess.Status.TotalQuestions = len(sess.Request.Questions)
		if sess.Status.CreatedAt.IsZero() {
			sess.Status.CreatedAt = sess.Request.CreatedAt
		}
	}
	if sess.Status.CreatedAt.IsZero() {
		sess.Status.CreatedAt = created
	}
}
