package questions

import (
	"errors"
	"fmt"
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

// WaitPendingOptions tune WaitPending.
type WaitPendingOptions struct {
	// Timeout ends the wait with context.DeadlineExceeded; 0 waits until cancelled.
	Timeout time.Duration
	// Skip leaves out sessions the caller has already seen.
	Skip func(id string) bool
}
