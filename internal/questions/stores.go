package questions

import (
	"context"
	"fmt"
	"time"

	"github.com/qkit-cli/qkit/internal/config"
)

// Store is where question sets wait for the person. Everything above the core (the MCP tool, the
// `qkit questions` commands, the web page, approvals from the ACP backend) holds a Store and never
// knows which one: the files under the state folder (dirstore, the default) or a key-value bucket
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
//     once. A detached set past its expiry reads as timed_out. The rules are in internal/lifecycle (change.go).
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
	// Detach and Attach: see lifecycle's change.go. Each applies detach/attach to the set under its lock.
	Detach(id, reason string) (*Session, error)
	Attach(id string, timeout time.Duration) (*Session, error)
	Wait(ctx context.Context, id string, opts WaitOptions) (*Session, error)
	WaitPending(ctx context.Context, opts WaitPendingOptions) (*Session, error)
	Cleanup(retention time.Duration) (int, error)
	// Changes wakes its channel (coalesced) whenever a set is created, changes or goes, until ctx
	// ends, without polling where the store has events (see dirstore's and natsstore's changes.go); for live pages.
	Changes(ctx context.Context) (<-chan struct{}, error)
	Ask(ctx context.Context, set *QuestionSet, opts AskOptions) (*Result, *Session, error)
	// Location says where the sets live, for messages: a folder, or a server and bucket.
	Location() string
	Close() error
}

// Opener opens one kind of store as qkit's settings describe it.
type Opener func(cfg *config.Config, opts Options) (Store, error)

// Kinds are the stores a binary links, by the name questions.store gives each ("file", "nats").
// The core links none of them: the file store is questions/dirstore and the NATS store
// questions/natsstore, so a binary that leaves the NATS store out does not link the NATS client.
// The command layer says which stores it links and hands them to what opens one.
type Kinds map[string]Opener

// Open opens the store qkit's settings choose (questions.store) among k: the files under
// <state>/questions, or the NATS bucket of questions.installation on questions.nats_url. A NATS
// server that cannot be reached is an error naming the URL; Open never falls back to files.
func (k Kinds) Open(cfg *config.Config, opts Options) (Store, error) {
	kind := config.QuestionsStore.Get(cfg)
	if open := k[kind]; open != nil {
		return open(cfg, opts)
	}
	if kind == "file" || kind == "nats" {
		return nil, fmt.Errorf("questions.store %q: this qkit is built without that store", kind)
	}
	return nil, fmt.Errorf("questions.store %q: expected file or nats", kind)
}
