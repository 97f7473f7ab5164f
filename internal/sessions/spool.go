package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// ingestSpool takes in the exchanges the light qkit binary spooled beside the store at path
// (sessionrec.Spool), in the order they were recorded and in one transaction, then removes their
// files. Nothing is lost and nothing blocks the store: a file that is not a spool file, or one the
// store refuses to record, is renamed *.bad and left for a person; one that cannot be read now or
// is of a newer format stays for a later try; a failure of the database itself leaves every file
// for the next open. It returns what went wrong, for the caller to warn about.
func (s *Store) ingestSpool(ctx context.Context, path string) error {
	files, err := sessionrec.ReadSpool(sessionrec.SpoolDir(filepath.Dir(path)))
	if err != nil || len(files) == 0 {
		return err
	}
	var done []string
	var problems []error
	err = s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, f := range files {
			if f.Err != nil {
				if f.Broken {
					_ = os.Rename(f.Path, f.Path+".bad")
				}
				problems = append(problems, fmt.Errorf("%s: %w", f.Path, f.Err))
				continue
			}
			// Each file under a savepoint: one the store refuses is set aside, not the others.
			if _, err := tx.ExecContext(ctx, "SAVEPOINT spooled"); err != nil {
				return err
			}
			if _, err := recordTx(ctx, tx, f.Exchange, f.At, true); err != nil {
				if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO spooled"); rerr != nil {
					return rerr
				}
				_ = os.Rename(f.Path, f.Path+".bad")
				problems = append(problems, fmt.Errorf("%s: %w", f.Path, err))
				continue
			}
			if _, err := tx.ExecContext(ctx, "RELEASE spooled"); err != nil {
				return err
			}
			done = append(done, f.Path)
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("the spooled sessions stay for the next time: %w", err)
	}
	for _, p := range done {
		_ = os.Remove(p) // another process taking the same files in may have removed it first
	}
	return errors.Join(problems...)
}

// PathStore is the store at a path, opened for each call and closed after it, for front ends
// that use it once or twice a process (askrun.Sessions.Store).
type PathStore string

// Continue is Store.Continue on the store at p.
func (p PathStore) Continue(ctx context.Context, id string) (Continuation, error) {
	st, err := Open(ctx, string(p))
	if err != nil {
		return Continuation{}, err
	}
	defer st.Close()
	return st.Continue(ctx, id)
}

// Messages is Store.Messages on the store at p.
func (p PathStore) Messages(ctx context.Context, id string) ([]Message, error) {
	st, err := Open(ctx, string(p))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Messages(ctx, id)
}

// Record is Record on the store at p.
func (p PathStore) Record(ctx context.Context, ex Exchange, now time.Time) (string, error) {
	return Record(ctx, string(p), ex, now)
}
