package dirstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Cleanup removes finished sessions (completed, rejected, timed_out, abandoned) last changed more than
// retention ago, and staging directories left by a crash. Open sessions are never removed: those whose
// asking process has exited are marked abandoned first, so the person can still see them for a whole
// retention period. It returns how many sessions it removed; it keeps going past errors and returns
// them joined.
func (s *Store) Cleanup(retention time.Duration) (int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("question sessions %s: %w", s.dir, err)
	}
	cutoff := s.now().Add(-retention)
	removed := 0
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".new-") {
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(s.now().Add(-time.Hour)) {
				if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if !e.IsDir() || !questions.ValidID(name) {
			continue // not ours: never touched
		}
		sess, err := s.Get(name)
		if err != nil {
			if !errors.Is(err, questions.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		if sess.Status.Status.Open() {
			continue
		}
		if last := lifecycle.LastChange(sess); last.IsZero() || !last.Before(cutoff) {
			continue
		}
		ok, err := s.remove(name, cutoff)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// remove deletes a finished session under its lock, checking again that it is still finished and old.
func (s *Store) remove(id string, cutoff time.Time) (bool, error) {
	lock, err := filestore.LockFor(s.path(id, StatusFile), dirPerm)
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	sess, err := s.read(id)
	if err != nil {
		return false, nil
	}
	if sess.Status.Status.Open() || !sess.Status.UpdatedAt.Before(cutoff) && !sess.Status.UpdatedAt.IsZero() {
		return false, nil
	}
	if err := os.RemoveAll(filepath.Join(s.dir, id)); err != nil {
		return false, fmt.Errorf("remove question set %s: %w", id, err)
	}
	return true, nil
}
