package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// FileName is the store's file in qkit's data folder.
const FileName = "qkit.db"

// Path is the store's file for the data folder dataDir.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// ErrAmbiguous and ErrFolderGone are sessionrec's (the light binary's askrun matches them too).
var (
	ErrAmbiguous  = sessionrec.ErrAmbiguous
	ErrFolderGone = sessionrec.ErrFolderGone
)

// Summary is a session as `sessions list` shows it (MCPServers, TrustedTools and AgentSession are
// not read).
type Summary struct {
	SessionRecord
	Turns int
	// FolderGone is set when the session's folder no longer exists.
	FolderGone bool
}

// Filter selects sessions for Summaries; zero fields select everything.
type Filter struct {
	Cwd     string
	Since   time.Time // updated at or after
	Backend string
	Limit   int // 0: no limit
}

// Summaries returns the sessions filter selects, most recently updated first.
func (s *Store) Summaries(ctx context.Context, f Filter) ([]Summary, error) {
	var out []Summary
	err := s.EachSummary(ctx, f, func(sum *Summary) error {
		out = append(out, *sum)
		return nil
	})
	return out, err
}

// EachSummary calls fn with each session filter selects, most recently updated first, and stops
// at fn's first error, which it returns. A list that renders as it goes holds no slice of
// Summaries: with 10,000 sessions that slice was a third of what a list allocated. *sum is
// reused: fn must copy what it keeps.
func (s *Store) EachSummary(ctx context.Context, f Filter, fn func(sum *Summary) error) error {
	// Only what a list shows: each column costs per row, and a list may have 10,000 rows. These
	// columns are all in the index sessions_list (migration 5), so the rows come from it alone.
	query := `SELECT id, cwd, model, title, backend, origin, mode, turns, created_at, updated_at FROM sessions`
	var where []string
	var args []any
	// The folder is not compared as text: a session recorded through a link to it is its too
	// (sessionrec.SameFolder, as ask --session decides), so it is tested row by row below, and
	// the limit counts the sessions that pass.
	inFolder := func(string) bool { return true }
	if f.Cwd != "" {
		inFolder = sessionrec.InFolder(f.Cwd)
	}
	if !f.Since.IsZero() {
		where = append(where, "updated_at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if f.Backend != "" {
		if f.Backend == BackendText {
			where = append(where, "backend IN ('', ?)")
		} else {
			where = append(where, "backend = ?")
		}
		args = append(args, f.Backend)
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY updated_at DESC, id DESC"
	if f.Limit > 0 && f.Cwd == "" {
		query += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	gone := map[string]bool{} // one stat per folder, however many sessions it has
	var sum Summary
	n := 0
	for rows.Next() {
		if f.Limit > 0 && n == f.Limit {
			break
		}
		sum = Summary{}
		r := &sum.SessionRecord
		var created, updated int64
		if err := rows.Scan(&r.ID, &r.Cwd, &r.Model, &r.Title, &r.Backend, &r.Origin, &r.Mode, &sum.Turns, &created, &updated); err != nil {
			return fmt.Errorf("listing sessions: %w", err)
		}
		if !inFolder(r.Cwd) {
			continue
		}
		n++
		r.CreatedAt, r.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		g, seen := gone[r.Cwd]
		if !seen {
			g = FolderGone(r.Cwd)
			gone[r.Cwd] = g
		}
		sum.FolderGone = g
		if err := fn(&sum); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	return nil
}

// FolderGone reports whether dir no longer exists (as a folder).
func FolderGone(dir string) bool {
	fi, err := os.Stat(dir)
	return err != nil && errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir()
}

// Find returns the session whose id is id or, failing that, the one session whose id starts with
// it. An unknown id wraps ErrSessionNotFound, a prefix of several ErrAmbiguous.
func (s *Store) Find(ctx context.Context, id string) (SessionRecord, error) {
	if id == "" {
		return SessionRecord{}, fmt.Errorf("session id is empty: %w", ErrSessionNotFound)
	}
	r, err := s.Get(ctx, id)
	if !errors.Is(err, ErrSessionNotFound) {
		return r, err
	}
	// GLOB with the special characters of the prefix escaped as [x]; ids are uuids anyway.
	var pat strings.Builder
	for _, c := range id {
		if strings.ContainsRune("*?[]", c) {
			pat.WriteString("[" + string(c) + "]")
		} else {
			pat.WriteRune(c)
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id GLOB ? ORDER BY id LIMIT 3`, pat.String()+"*")
	if err != nil {
		return r, fmt.Errorf("session %s: %w", id, err)
	}
	defer rows.Close()
	var found []SessionRecord
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return r, fmt.Errorf("session %s: %w", id, err)
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return SessionRecord{}, fmt.Errorf("session %s: %w", id, err)
	}
	switch len(found) {
	case 0:
		return SessionRecord{}, fmt.Errorf("session %s: %w", id, ErrSessionNotFound)
	case 1:
		return found[0], nil
	}
	ids := []string{termtext.VisibleLine(found[0].ID), termtext.VisibleLine(found[1].ID)}
	if len(found) > 2 {
		ids = append(ids, "…")
	}
	return SessionRecord{}, fmt.Errorf("session %s: %w: it starts %s; give more of it", id, ErrAmbiguous, strings.Join(ids, ", "))
}

// Delete removes the sessions ids and their transcripts in one transaction: all or none. It
// returns how many were there.
func (s *Store) Delete(ctx context.Context, ids []string) (int, error) {
	var n int
	err := s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return tx.Commit()
	})
	if err != nil {
		return 0, fmt.Errorf("removing sessions: %w", err)
	}
	return n, nil
}

// PruneCandidates are the sessions Prune would remove: last updated before cutoff, except the
// keep most recently updated sessions, oldest first.
func (s *Store) PruneCandidates(ctx context.Context, cutoff time.Time, keep int) ([]SessionRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE updated_at < ? AND id NOT IN
		(SELECT id FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?) ORDER BY updated_at, id`, cutoff.UnixNano(), max(keep, 0))
	if err != nil {
		return nil, fmt.Errorf("pruning sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRecord
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("pruning sessions: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Prune removes, in one transaction, the sessions of ids that are still prunable by cutoff and
// keep (a session another process continued since PruneCandidates stays). It returns the ids
// removed.
func (s *Store) Prune(ctx context.Context, ids []string, cutoff time.Time, keep int) ([]string, error) {
	var removed []string
	err := s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, id := range ids {
			var gone string
			err := tx.QueryRowContext(ctx, `DELETE FROM sessions WHERE id = ? AND updated_at < ? AND id NOT IN
				(SELECT id FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?) RETURNING id`, id, cutoff.UnixNano(), max(keep, 0)).Scan(&gone)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			removed = append(removed, gone)
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("pruning sessions: %w", err)
	}
	return removed, nil
}
