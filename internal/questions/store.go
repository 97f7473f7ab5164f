package questions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/filestore"
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

// Files of a session directory, and their permissions.
const (
	RequestFile = "request.json"
	StatusFile  = "status.json"
	AnswersFile = "answers.json"
	dirPerm     = 0o700
	filePerm    = 0o600
)

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
	// answersBad: answers.json exists but does not parse (perhaps a non-atomic write in progress).
	answersBad bool
	// answersMod is answers.json's modification time, when it exists.
	answersMod time.Time
	// rev is the NATS key's revision the session was read at (0 in the file store).
	rev uint64
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

// FileStore keeps sessions under one directory (<state>/questions). It is safe for concurrent use by
// goroutines and processes: every change to a session happens under that session's lock.
type FileStore struct {
	dir    string
	now    func() time.Time
	poll   time.Duration
	logger *slog.Logger

	warned sync.Map // session id + refusal already logged, so a wait does not repeat it

	hubs sharedHub[*hub] // started by the first wait, stopped when the last one ends

	bg background // the cleanups Ask starts, joined by Close
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

// NewFileStore opens the store in dir, creating it 0700 when missing and tightening it when it is not.
func NewFileStore(dir string, opts Options) (*FileStore, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("question sessions %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, dirPerm)
	}
	s := &FileStore{dir: dir, now: opts.Now, poll: opts.Poll, logger: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Dir is the directory that holds the sessions.
func (s *FileStore) Dir() string { return s.dir }

// Close waits for a background cleanup to finish and releases the store. The file watcher stops by
// itself when the last wait ends. Close is safe to call more than once.
func (s *FileStore) Close() error {
	s.bg.wait()
	s.hubs.close()
	return nil
}

// ValidID reports whether id is a session id: a UUID in canonical lower-case form.
func ValidID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && len(id) == 36 && u.String() == id
}

func validPrefix(p string) bool {
	if p == "" || len(p) > 36 {
		return false
	}
	for _, r := range p {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '-') {
			return false
		}
	}
	return true
}

func (s *FileStore) path(id, file string) string { return filepath.Join(s.dir, id, file) }

// CreateOptions describe a new session.
type CreateOptions struct {
	Source  string        // "mcp" or "cli"
	CallID  string        // empty: a new UUID
	Timeout time.Duration // 0: no expiry recorded
	// Detachable: the set outlives its call (see Request.Detachable).
	Detachable bool
}

// Create writes a new pending session. The directory is built under a temporary name and renamed
// into place, so no reader ever sees half a session.
func (s *FileStore) Create(set *QuestionSet, opts CreateOptions) (*Session, error) {
	sess := newSession(s.now, set, opts)
	id, req, st := sess.ID, sess.Request, sess.Status
	staging := filepath.Join(s.dir, ".new-"+id)
	if err := os.Mkdir(staging, dirPerm); err != nil {
		return nil, fmt.Errorf("create question set: %w", err)
	}
	for name, v := range map[string]any{RequestFile: req, StatusFile: st} {
		if err := writeJSON(filepath.Join(staging, name), v); err != nil {
			_ = os.RemoveAll(staging)
			return nil, err
		}
	}
	if err := os.Rename(staging, filepath.Join(s.dir, id)); err != nil {
		_ = os.RemoveAll(staging)
		return nil, fmt.Errorf("create question set %s: %w", id, err)
	}
	return sess, nil
}

// newSession is a new pending session with a fresh id (and call id unless given), owned by this process.
func newSession(now func() time.Time, set *QuestionSet, opts CreateOptions) *Session {
	id := uuid.NewString()
	callID := opts.CallID
	if callID == "" {
		callID = uuid.NewString()
	}
	t := now().UTC()
	req := &Request{SessionID: id, CallID: callID, CreatedAt: t, Source: opts.Source, Owner: Self(), Detachable: opts.Detachable, Questions: set.Questions}
	if opts.Timeout > 0 {
		exp := t.Add(opts.Timeout)
		req.ExpiresAt = &exp
	}
	st := Status{SessionID: id, CallID: callID, Status: Pending, CreatedAt: t, UpdatedAt: t, TotalQuestions: len(set.Questions)}
	return &Session{ID: id, Request: req, Status: st}
}

// writeSettled writes what reconcile settles from the files themselves (an answer written by hand,
// an owner that has exited, a lapsed claim): atomically, the data synced before the rename, but
// without syncing the folder afterwards. It is derived from what is on disk already, so a crash that
// loses the rename only means the same settling is done again on the next read; the folder sync
// is one wait for the disk fewer on a hand-written answer's way to the assistant.
func writeSettled(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), filePerm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// Replaced, never written through: a link or FIFO put in a set's folder is not followed.
	return filestore.ReplaceAtomic(path, append(data, '\n'), filePerm, dirPerm)
}

// Resolve turns an id or unambiguous prefix into a full session id.
func (s *FileStore) Resolve(prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !validPrefix(p) {
		return "", &InvalidIDError{ID: prefix}
	}
	ids, err := s.ids()
	if err != nil {
		return "", err
	}
	return matchPrefix(prefix, p, ids)
}

// matchPrefix finds the one id that is p or starts with p (prefix is what the user typed).
func matchPrefix(prefix, p string, ids []string) (string, error) {
	var match []string
	for _, id := range ids {
		if id == p {
			return id, nil
		}
		if strings.HasPrefix(id, p) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("question set %q: %w", prefix, ErrNotFound)
	case 1:
		return match[0], nil
	}
	return "", &AmbiguousError{Prefix: prefix, IDs: match}
}

// ids lists the session directories; anything not named by a UUID is ignored.
func (s *FileStore) ids() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("question sessions %s: %w", s.dir, err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// read loads a session without changing it. A missing directory is ErrNotFound; malformed files are
// reported in Problem.
func (s *FileStore) read(id string) (*Session, error) {
	if !ValidID(id) {
		return nil, &InvalidIDError{ID: id}
	}
	dirInfo, err := os.Stat(filepath.Join(s.dir, id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("question set %s: %w", id, ErrNotFound)
		}
		return nil, err
	}
	_, reqErr := os.Stat(s.path(id, RequestFile))
	_, stErr := os.Stat(s.path(id, StatusFile))
	if errors.Is(reqErr, fs.ErrNotExist) && errors.Is(stErr, fs.ErrNotExist) {
		// Nothing of the set is left (it is being removed): gone, not broken.
		return nil, fmt.Errorf("question set %s: %w", id, ErrNotFound)
	}
	sess := &Session{ID: id}
	var problems []string
	var req Request
	switch err := readJSON(s.path(id, RequestFile), &req); {
	case err != nil:
		problems = append(problems, err.Error())
	default:
		if _, verr := QuestionSetFrom(roundTrip(req.Questions)); verr != nil || req.SessionID != id {
			if verr == nil {
				verr = fmt.Errorf("sessionId %q does not match the directory", req.SessionID)
			}
			problems = append(problems, fmt.Sprintf("%s: %v", RequestFile, verr))
		} else {
			sess.Request = &req
		}
	}
	if err := readJSON(s.path(id, StatusFile), &sess.Status); err != nil {
		problems = append(problems, err.Error())
		sess.Status = Status{Status: Pending}
	} else if !knownState(sess.Status.Status) {
		problems = append(problems, fmt.Sprintf("%s: unknown status %q", StatusFile, sess.Status.Status))
		sess.Status.Status = Pending
	}
	sess.fillStatus(id, dirInfo.ModTime().UTC()) // the folder's time: nothing better on record
	var ans Answers
	var refused *refusedError
	switch err := readJSON(s.path(id, AnswersFile), &ans); {
	case errors.Is(err, fs.ErrNotExist):
	case errors.As(err, &refused):
		// Not an answer anyone could have written: ignored, and the set stays answerable (an
		// answer replaces the file).
		sess.Refused = err.Error()
		s.warnRefused(id, sess.Refused)
	case err != nil:
		problems = append(problems, err.Error())
		sess.answersBad = true
	default:
		sess.Answers = &ans
	}
	if sess.Answers != nil || sess.answersBad {
		// Stat after reading: a write in between only makes the file look younger.
		if fi, err := os.Stat(s.path(id, AnswersFile)); err == nil {
			sess.answersMod = fi.ModTime()
		}
	}
	sess.Problem = strings.Join(problems, "; ")
	return sess, nil
}

func knownState(s State) bool {
	switch s {
	case Pending, Detached, InProgress, Completed, Rejected, TimedOut, Abandoned:
		return true
	}
	return false
}

func roundTrip(qs []Question) any {
	data, _ := json.Marshal(map[string]any{"questions": qs})
	var v any
	_ = json.Unmarshal(data, &v)
	return v
}

// maxFileSize caps what qkit reads of a set's file. The largest set the schema allows, with every
// answer's text at its limit and escaped, is far below it.
const maxFileSize = 1 << 20

// refusedError is a set's file that qkit does not read at all: not a regular file (a FIFO, a device,
// a link to one, a folder), or larger than maxFileSize. Reading the first could block for ever, the
// second use any amount of memory.
type refusedError struct {
	Name string
	Err  error
}

func (e *refusedError) Error() string {
	if errors.Is(e.Err, filestore.ErrTooLarge) {
		return fmt.Sprintf("%s is larger than %d MiB; qkit does not read it", e.Name, maxFileSize>>20)
	}
	return fmt.Sprintf("%s is not a regular file; qkit does not read it", e.Name)
}

func (e *refusedError) Unwrap() error { return e.Err }

func readJSON(path string, v any) error {
	data, err := filestore.ReadRegular(path, maxFileSize)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s is missing: %w", filepath.Base(path), err)
		case errors.Is(err, filestore.ErrNotRegular), errors.Is(err, filestore.ErrTooLarge):
			return &refusedError{Name: filepath.Base(path), Err: err}
		}
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s is malformed: %v", filepath.Base(path), err)
	}
	return nil
}

// warnRefused logs, once per store, that a set's answers.json is not read.
func (s *FileStore) warnRefused(id, why string) {
	if _, seen := s.warned.LoadOrStore(id+"\x00"+why, true); !seen {
		s.logger.Warn("answers.json ignored", "reason", why, "sessionId", id, "path", s.path(id, AnswersFile),
			"hint", "remove it, or answer with qkit questions answer")
	}
}

// Get loads one session by full id, settling it first (see reconcile).
func (s *FileStore) Get(id string) (*Session, error) {
	sess, err := s.read(id)
	if err != nil {
		return nil, err
	}
	return s.reconcile(sess)
}

// List returns every session, oldest first, each settled (see reconcile).
func (s *FileStore) List() ([]*Session, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]*Session, 0, len(ids))
	for _, id := range ids {
		sess, err := s.read(id)
		if err == nil {
			var settled *Session
			if settled, err = s.reconcile(sess); err == nil {
				sess = settled
			} else if !errors.Is(err, ErrNotFound) {
				// One broken session must not hide the others: it is shown as abandoned, with why.
				s.logger.Warn("question set cannot be repaired", "sessionId", id, "error", err)
				sess.Status.Status, sess.Status.Claim = Abandoned, nil
				sess.Status.Reason = strings.TrimPrefix(sess.Problem+"; ", "; ") + err.Error()
				err = nil
			}
		}
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	sortSessions(out)
	return out, nil
}
