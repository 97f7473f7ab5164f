package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// Exchange is sessionrec.Exchange, for Record.
type Exchange = sessionrec.Exchange

// Record stores ex's turn in one transaction, creating its session first when needed, and returns
// the session's id.
func (s *Store) Record(ctx context.Context, ex Exchange, now time.Time) (string, error) {
	var id string
	err := s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if id, err = recordTx(ctx, tx, ex, now, false); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return "", fmt.Errorf("recording the session: %w", err)
	}
	return id, nil
}

// recordTx is Record inside tx. once skips a turn its session already holds (the same prompt
// stored at the same time): a spool file taken in twice (a crash between the commit and the
// file's removal) is recorded once.
func recordTx(ctx context.Context, tx *sql.Tx, ex Exchange, now time.Time, once bool) (string, error) {
	id := ex.ID
	var err error
	if id == "" && ex.AgentSession != "" {
		id, err = lookup(ctx, tx, `SELECT id FROM sessions WHERE agent_session = ? ORDER BY updated_at DESC LIMIT 1`, ex.AgentSession)
	} else if id == "" && ex.Continue {
		id, err = lastInFolder(ctx, tx, ex.Origin, ex.Cwd)
	}
	if err != nil {
		return "", err
	}
	exists := func(id string) (bool, error) {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE id = ?`, id).Scan(&n)
		return n > 0, err
	}
	switch {
	case id != "":
	case ex.AgentSession != "":
		// Named after the agent's session only when its id is safe to print (list, show, rm and
		// completion print ids as they are); the spool names it the same way. No session has
		// this agent session (the lookup above), so an agent whose id is another session's
		// (another agent's, or one it saw) gets a new one instead of writing into that one.
		id = sessionrec.SessionIDFor(ex.AgentSession)
		taken, err := exists(id)
		if err != nil {
			return "", err
		}
		if taken {
			id = uuid.NewString()
		}
	default:
		id = uuid.NewString()
	}
	found, err := exists(id)
	if err != nil {
		return "", err
	}
	if !found {
		backend := ex.Backend
		if backend == "" {
			backend = BackendText
		}
		r := SessionRecord{ID: id, Cwd: ex.Cwd, Model: ex.Model, TrustedTools: ex.TrustedTools, Backend: backend,
			AgentSession: ex.AgentSession, Origin: ex.Origin, CreatedAt: now, UpdatedAt: now}
		if err := insertSession(ctx, tx, r); err != nil {
			return "", err
		}
	} else {
		if once {
			var seen int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'user' AND created_at = ? AND text = ?`,
				id, now.UnixNano(), ex.Turn.Prompt).Scan(&seen); err != nil {
				return "", err
			}
			if seen > 0 {
				return id, nil
			}
		}
		if ex.AgentSession != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET agent_session = ? WHERE id = ?`, ex.AgentSession, id); err != nil {
				return "", err
			}
		}
	}
	return id, appendTurnTx(ctx, tx, id, ex.Turn, now)
}

// Record opens the store at path, records ex (see Store.Record) and closes it: for front ends that
// write one turn per process.
func Record(ctx context.Context, path string, ex Exchange, now time.Time) (string, error) {
	s, err := Open(ctx, path)
	if err != nil {
		return "", err
	}
	defer s.Close()
	return s.Record(ctx, ex, now)
}

func lookup(ctx context.Context, tx *sql.Tx, query string, args ...any) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, query, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// Continuation is sessionrec.Continuation.
type Continuation = sessionrec.Continuation

// Continue finds session id (an unambiguous prefix will do) for a front end that goes on with it.
// A session whose folder no longer exists is an error wrapping ErrFolderGone. A session with no
// agent session (an import, a text-path session) comes with its transcript as History.
func (s *Store) Continue(ctx context.Context, id string) (Continuation, error) {
	r, err := s.Find(ctx, id)
	if err != nil {
		return Continuation{}, err
	}
	if FolderGone(r.Cwd) {
		return Continuation{}, fmt.Errorf("session %s: its folder %s: %w", r.ID, r.Cwd, ErrFolderGone)
	}
	c := Continuation{Session: r, AgentSession: r.AgentSession}
	if c.AgentSession == "" {
		if c.History, err = s.Messages(ctx, r.ID); err != nil {
			return Continuation{}, err
		}
	}
	return c, nil
}

// WithHistory is sessionrec.WithHistory: the session's earlier turns before prompt, within budget bytes.
func WithHistory(history []Message, prompt string, budget int) (string, int) {
	return sessionrec.WithHistory(history, prompt, budget)
}

// ToolCallsOf is sessionrec.ToolCallsOf: a run's tool calls, as they ended, for the transcript.
func ToolCallsOf(tools []agent.ToolCall) []ToolCall { return sessionrec.ToolCallsOf(tools) }

// UsageOf is sessionrec.UsageOf: the agent's usage for the transcript; nil when it reported none.
func UsageOf(u agent.Usage) *Usage { return sessionrec.UsageOf(u) }
