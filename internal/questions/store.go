package questions

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
)

// State is a session's status.
type State string

// The statuses of a session. Only pending, detached and in-progress sessions can still be answered.
const (
	Pending State = "pending"
	// Detached: the call that asked went away (cancelled, or its server exited) before the answer.
	// The set stays answerable, and a repeated call with the same questions collects the answer.
	Detached   State = "detached"
	InProgress State = "in-progress"
	Completed  State = "completed"
	Rejected   State = "rejected"
	TimedOut   State = "timed_out"
	Abandoned  State = "abandoned"
)

// Open reports whether the session can still be answered.
func (s State) Open() bool { return s == Pending || s == Detached || s == InProgress }

// Request is request.json: what was asked, by whom, and until when.
type Request struct {
	SessionID string     `json:"sessionId"`
	CallID    string     `json:"callId"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Source    string     `json:"source"`
	Owner     Process    `json:"owner"`
	// Detachable sets outlive their call: when it goes away they become detached, not abandoned.
	Detachable bool       `json:"detachable,omitempty"`
	Questions  []Question `json:"questions"`
}

// Status is status.json.
type Status struct {
	SessionID       string    `json:"sessionId"`
	CallID          string    `json:"callId"`
	Status          State     `json:"status"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
	TotalQuestions  int       `json:"totalQuestions"`
	RejectionReason string    `json:"rejectionReason,omitempty"`
	// Reason says why a session timed out or was abandoned.
	Reason string `json:"reason,omitempty"`
	// Claim is set while a `questions wait` terminal walks the person through the set.
	Claim *Claim `json:"claim,omitempty"`
	// Detached: no call waits for the outcome. On an open set the status is then detached (or
	// in-progress while a terminal holds it); on a completed or rejected set it means no call has
	// collected the outcome yet, and a repeated call will.
	Detached bool `json:"detached,omitempty"`
	// Waiter is the process whose call waits now, when a repeated call took the set over (nil:
	// Request.Owner).
	Waiter *Process `json:"waiter,omitempty"`
	// ExpiresAt replaces Request.ExpiresAt once a repeated call took the set over.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Claim marks a session as being answered in one terminal, so a second terminal leaves it alone.
type Claim struct {
	Token string    `json:"token"`
	By    Process   `json:"by"`
	Since time.Time `json:"since"`
}

// Answers is answers.json.
type Answers struct {
	SessionID  string    `json:"sessionId"`
	CallID     string    `json:"callId"`
	AnsweredAt time.Time `json:"answeredAt"`
	Answers    []Answer  `json:"answers"`
}

// Session is one session as read from disk. Request or Answers is nil when its file is absent or
// malformed; Problem then says what is wrong.
type Session struct {
	ID      string
	Request *Request
	Status  Status
	Answers *Answers
	Problem string
	// Refused says why answers.json was not read (not a regular file, or too large); the set
	// stays open, as if there were no answers.json.
	Refused string
}

// Set returns the session's question set (empty when request.json is unreadable).
func (s *Session) Set() *QuestionSet {
	if s.Request == nil {
		return &QuestionSet{}
	}
	return &QuestionSet{Questions: s.Request.Questions}
}

// ShortID is the first 8 characters of the id, as shown in tables.
func (s *Session) ShortID() string { return s.ID[:8] }

// Offered reports whether questions wait would offer the set to a person: open, taken by no
// terminal (pending, or detached from its call), and readable.
func (s *Session) Offered() bool {
	return (s.Status.Status == Pending || s.Status.Status == Detached) && s.Request != nil
}

// Header is the first question's header, which names the set in lists ("" without questions).
func (s *Session) Header() string {
	if qs := s.Set().Questions; len(qs) > 0 {
		return qs[0].Header
	}
	return ""
}

// Source is who asked the set (mcp, cli, acp), or "" when request.json is unreadable.
func (s *Session) Source() string {
	if s.Request == nil {
		return ""
	}
	return s.Request.Source
}

// Age is how long before now the set was asked, the short way lists and the page show it: 45s,
// 12m, 3h, 2d.
func (s *Session) Age(now time.Time) string {
	d := now.Sub(s.Status.CreatedAt)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Errors of the store. Callers map them to exit codes with errors.Is / errors.As.
var (
	// ErrNotFound: no session has that id or prefix.
	ErrNotFound = errors.New("no such question set")
	// ErrClaimed: another terminal is walking the person through this session.
	ErrClaimed = errors.New("is being answered in another terminal")
)

// InvalidIDError is a session id or prefix that is not (part of) a UUID; it never becomes a path.
type InvalidIDError struct{ ID string }

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("invalid question set id %q: expected a UUID or a prefix of one (hex digits and dashes)", e.ID)
}

// AmbiguousError is a prefix that matches several sessions.
type AmbiguousError struct {
	Prefix string
	IDs    []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("question set id %q is ambiguous: it matches %s; give more characters", e.Prefix, strings.Join(e.IDs, ", "))
}

// ClosedError says a session can no longer be answered, and why.
type ClosedError struct {
	ID     string
	Status State
	Reason string
}

// Error says what became of the set, with its status in parentheses for scripts: "question set … was
// already answered (completed)". The reason is added where it explains the status (why a set was
// abandoned or timed out); an answer or a rejection speaks for itself.
func (e *ClosedError) Error() string {
	var msg string
	switch e.Status {
	case Completed:
		return fmt.Sprintf("question set %s was already answered (%s)", e.ID, e.Status)
	case Rejected:
		return fmt.Sprintf("question set %s was already rejected (%s)", e.ID, e.Status)
	case TimedOut:
		msg = fmt.Sprintf("question set %s timed out before anyone answered (%s)", e.ID, e.Status)
	case Abandoned:
		msg = fmt.Sprintf("question set %s was abandoned (%s)", e.ID, e.Status)
	default:
		msg = fmt.Sprintf("question set %s is no longer open (%s)", e.ID, termLine(string(e.Status)))
	}
	if e.Reason != "" {
		msg += ": " + term(e.Reason)
	}
	return msg
}

// Options tune a store; zero values take the defaults.
type Options struct {
	// Now is the clock.
	Now func() time.Time
	// Poll is the fallback poll interval while waiting. The default is 1 minute when file events work
	// (a safety net for filesystems that drop them) and 1s when they cannot be had at all.
	Poll time.Duration
	// Logger receives warnings about malformed sessions; nil discards them.
	Logger *slog.Logger
}

// ValidID reports whether id is a session id: a UUID in canonical lower-case form.
func ValidID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && len(id) == 36 && u.String() == id
}

// CreateOptions describe a new session.
type CreateOptions struct {
	Source  string        // "mcp" or "cli"
	CallID  string        // empty: a new UUID
	Timeout time.Duration // 0: no expiry recorded
	// Detachable: the set outlives its call (see Request.Detachable).
	Detachable bool
}
