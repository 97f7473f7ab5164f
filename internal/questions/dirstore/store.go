// Package dirstore is the questions store that keeps each question set in a folder of JSON files
// under the state folder (<state>/questions): the default store, questions.store file. It keeps the
// semantics questions.Store states; what every store shares is in the core's internal lifecycle.
package dirstore

import (
	"context"
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

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Files of a session directory, and their permissions.
const (
	RequestFile = "request.json"
	StatusFile  = "status.json"
	AnswersFile = "answers.json"
	dirPerm     = 0o700
	filePerm    = 0o600
)

var _ questions.Store = (*Store)(nil)

// Open opens the file store under cfg's state folder: a questions.Opener.
func Open(cfg *config.Config, opts questions.Options) (questions.Store, error) {
	s, err := New(filepath.Join(cfg.Paths.State, "questions"), opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Store keeps sessions under one directory (<state>/questions). It is safe for concurrent use by
// goroutines and processes: every change to a session happens under that session's lock.
type Store struct {
	dir    string
	now    func() time.Time
	poll   time.Duration
	logger *slog.Logger

	warned sync.Map // session id + refusal already logged, so a wait does not repeat it

	hubs lifecycle.SharedHub[*hub] // started by the first wait, stopped when the last one ends

	bg lifecycle.Background // the cleanups Ask starts, joined by Close

	lifecycle.Transitions // Answer, Reject, Claim, Release, Abandon: through transition
}

// New opens the store in dir, creating it 0700 when missing and tightening it when it is not.
func New(dir string, opts questions.Options) (*Store, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("question sessions %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, dirPerm)
	}
	s := &Store{dir: dir, now: opts.Now, poll: opts.Poll, logger: opts.Logger}
	s.Transitions = lifecycle.NewTransitions(func() time.Time { return s.now() }, s.transition)
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Dir is the directory that holds the sessions.
func (s *Store) Dir() string { return s.dir }

// Close waits for a background cleanup to finish and releases the store. The file watcher stops by
// itself when the last wait ends. Close is safe to call more than once.
func (s *Store) Close() error {
	s.bg.Wait()
	s.hubs.Close()
	return nil
}

func (s *Store) path(id, file string) string { return filepath.Join(s.dir, id, file) }

// Create writes a new pending session. The directory is built under a temporary name and renamed
// into place, so no reader ever sees half a session.
func (s *Store) Create(set *questions.QuestionSet, opts questions.CreateOptions) (*questions.Session, error) {
	sess := lifecycle.NewSession(s.now, set, opts)
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
func (s *Store) Resolve(prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !lifecycle.ValidPrefix(p) {
		return "", &questions.InvalidIDError{ID: prefix}
	}
	ids, err := s.ids()
	if err != nil {
		return "", err
	}
	return lifecycle.MatchPrefix(prefix, p, ids)
}

// ids lists the session directories; anything not named by a UUID is ignored.
func (s *Store) ids() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("question sessions %s: %w", s.dir, err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && questions.ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// set is a session as this store reads it, with what only the file store knows of its answers.json.
type set struct {
	*questions.Session
	// answersBad: answers.json exists but does not parse (perhaps a non-atomic write in progress).
	answersBad bool
	// answersMod is answers.json's modification time, when it exists.
	answersMod time.Time
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

// read loads a session without changing it. A missing directory is ErrNotFound; malformed files are
// reported in Problem.
func (s *Store) read(id string) (*set, error) {
	if !questions.ValidID(id) {
		return nil, &questions.InvalidIDError{ID: id}
	}
	dirInfo, err := os.Stat(filepath.Join(s.dir, id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("question set %s: %w", id, questions.ErrNotFound)
		}
		return nil, err
	}
	_, reqErr := os.Stat(s.path(id, RequestFile))
	_, stErr := os.Stat(s.path(id, StatusFile))
	if errors.Is(reqErr, fs.ErrNotExist) && errors.Is(stErr, fs.ErrNotExist) {
		// Nothing of the set is left (it is being removed): gone, not broken.
		return nil, fmt.Errorf("question set %s: %w", id, questions.ErrNotFound)
	}
	sess := &set{Session: &questions.Session{ID: id}}
	var problems []string
	var req questions.Request
	switch err := readJSON(s.path(id, RequestFile), &req); {
	case err != nil:
		problems = append(problems, err.Error())
	default:
		if _, verr := questions.QuestionSetFrom(lifecycle.RoundTrip(req.Questions)); verr != nil || req.SessionID != id {
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
		sess.Status = questions.Status{Status: questions.Pending}
	} else if !lifecycle.KnownState(sess.Status.Status) {
		problems = append(problems, fmt.Sprintf("%s: unknown status %q", StatusFile, sess.Status.Status))
		sess.Status.Status = questions.Pending
	}
	lifecycle.FillStatus(sess.Session, id, dirInfo.ModTime().UTC()) // the folder's time: nothing better on record
	var ans questions.Answers
	var refused *refusedError
	badAnswers := false
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
	case sess.Status.Status == questions.Completed && sess.Request != nil:
		// A closed set's answers are checked as the NATS store checks them: answers that do not
		// fit the questions (written by another tool) are not handed out as the set's. An open
		// set's answers.json is checked when it is adopted (lifecycle.Adopt).
		if cerr := lifecycle.CheckStored(sess.Session, &ans); cerr != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", AnswersFile, cerr))
			badAnswers = true
			break
		}
		sess.Answers = &ans
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
	if badAnswers {
		// Shown abandoned, as the NATS store shows it; the files are left as they are.
		sess.Status.Status, sess.Status.Claim, sess.Status.Reason = questions.Abandoned, nil, sess.Problem
	}
	return sess, nil
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
func (s *Store) warnRefused(id, why string) {
	if _, seen := s.warned.LoadOrStore(id+"\x00"+why, true); !seen {
		s.logger.Warn("answers.json ignored", "reason", why, "sessionId", id, "path", s.path(id, AnswersFile),
			"hint", "remove it, or answer with qkit questions answer")
	}
}

// Get loads one session by full id, settling it first (see reconcile).
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

// List returns every session, oldest first, each settled (see reconcile).
func (s *Store) List() ([]*questions.Session, error) {
	return lifecycle.Sessions(s.list())
}

// list is List with what the file store knows of each set's answers.json.
func (s *Store) list() ([]*set, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]*set, 0, len(ids))
	for _, id := range ids {
		sess, err := s.read(id)
		if err == nil {
			var settled *set
			if settled, err = s.reconcile(sess); err == nil {
				sess = settled
			} else if !errors.Is(err, questions.ErrNotFound) {
				// One broken session must not hide the others: it is shown as abandoned, with why.
				s.logger.Warn("question set cannot be repaired", "sessionId", id, "error", err)
				sess.Status.Status, sess.Status.Claim = questions.Abandoned, nil
				sess.Status.Reason = strings.TrimPrefix(sess.Problem+"; ", "; ") + err.Error()
				err = nil
			}
		}
		if errors.Is(err, questions.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	lifecycle.SortSessions(out, (*set).session)
	return out, nil
}

// Location is the folder that holds the sessions.
func (s *Store) Location() string { return s.dir }

// Ask is the whole ask_user_questions flow, shared by the MCP tool and `qkit questions ask`: start a
// background cleanup of expired sessions (which delays neither the question nor the answer; Close
// joins it), create the session, wait for the person, and return the
// result (answered or rejected). Timeouts and abandonment are *EndedError; the session id is in the
// returned session even then.
func (s *Store) Ask(ctx context.Context, set *questions.QuestionSet, opts questions.AskOptions) (*questions.Result, *questions.Session, error) {
	return lifecycle.Ask(ctx, s, &s.bg, set, opts)
}
