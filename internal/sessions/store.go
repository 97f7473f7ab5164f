// Package sessions keeps qkit's conversations with the agent: the session table (id, folder, MCP
// servers, model, trusted tools, title, the agent's own session for the ACP backend) and each
// session's transcript, in SQLite, and builds a prompt's history from the transcript. `qkit acp
// serve` is its front end today; it knows nothing of any protocol.
package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// The record types and errors live in internal/sessionrec, which links no SQLite (the light qkit
// binary builds and spools records with them); these names are the same types.
type (
	Role          = sessionrec.Role
	Message       = sessionrec.Message
	ToolCall      = sessionrec.ToolCall
	Usage         = sessionrec.Usage
	Turn          = sessionrec.Turn
	SessionRecord = sessionrec.SessionRecord
)

// ErrSessionNotFound is returned for a session id the database does not hold.
var ErrSessionNotFound = sessionrec.ErrSessionNotFound

// The roles, front ends and backends of sessionrec.
const (
	RoleUser       = sessionrec.RoleUser
	RoleAgent      = sessionrec.RoleAgent
	OriginACPServe = sessionrec.OriginACPServe
	OriginAsk      = sessionrec.OriginAsk
	OriginMCP      = sessionrec.OriginMCP
	OriginImport   = sessionrec.OriginImport
	BackendText    = sessionrec.BackendText
	BackendACP     = sessionrec.BackendACP
)

// Store keeps sessions and their transcripts in SQLite. It is safe for concurrent use, also
// by several processes on the same file (two editor windows): WAL lets readers run beside the one
// writer, and the busy timeout makes writers wait for each other instead of failing.
type Store struct {
	db *sql.DB
	// writer lets one write at a time at the database from this process. SQLite allows one writer
	// anyway, and a connection that finds the lock taken waits in SQLite's busy handler, which
	// sleeps in steps of up to 100 ms: fifty turns ending at once took 300 ms each to store, holding
	// their replies all that time. Queued here, each starts as soon as the one before has
	// committed. (Other processes still meet the busy handler.)
	writer chan struct{}
	// spoolErr is what went wrong taking in the spool when the store opened (SpoolProblem).
	spoolErr error
}

// write runs f holding this process's write turn.
func (s *Store) write(ctx context.Context, f func() error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	return f()
}

// migrations are applied in order; the database's user_version says how many have run. Never
// edit one that has shipped: append a new one.
var migrations = []string{
	`CREATE TABLE sessions (
		id            TEXT PRIMARY KEY,
		cwd           TEXT NOT NULL,
		mcp_servers   TEXT NOT NULL DEFAULT '[]',
		model         TEXT NOT NULL DEFAULT '',
		trusted_tools TEXT NOT NULL DEFAULT '[]',
		title         TEXT NOT NULL DEFAULT '',
		created_at    INTEGER NOT NULL,
		updated_at    INTEGER NOT NULL
	);
	CREATE INDEX sessions_cwd ON sessions(cwd, updated_at);
	CREATE TABLE messages (
		session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
		seq        INTEGER NOT NULL,
		role       TEXT NOT NULL CHECK (role IN ('user', 'agent')),
		text       TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		PRIMARY KEY (session_id, seq)
	);`,
	`ALTER TABLE messages ADD COLUMN blocks TEXT;`,
	`ALTER TABLE sessions ADD COLUMN backend TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN agent_session TEXT NOT NULL DEFAULT '';`,
	// 4: where a session came from (every session before was acp serve's), its mode, the count of
	// its turns (kept by the writers, so a list of 10,000 sessions counts nothing), and each
	// reply's tool calls and usage as JSON.
	`ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT '';
	UPDATE sessions SET origin = 'acp-serve';
	ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
	UPDATE sessions SET turns = (SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id AND m.role = 'user');
	ALTER TABLE messages ADD COLUMN tools TEXT;
	ALTER TABLE messages ADD COLUMN usage TEXT;
	CREATE INDEX sessions_updated ON sessions(updated_at, id);`,
	// 5: sessions list's index: newest first, with every column a list shows, so listing 10,000
	// sessions reads the index alone instead of looking each row up in the table (a third of the
	// list's time). It starts as sessions_updated did, which it replaces.
	`CREATE INDEX sessions_list ON sessions(updated_at, id, cwd, model, title, backend, origin, mode, turns, created_at);
	DROP INDEX sessions_updated;`,
	// 6: how each reply's turn ended (sessionrec.Ending's stop reasons; '' for replies stored
	// before, whose ending nobody kept) and whether qkit cut it, beside the agent's own text: the
	// text no longer carries qkit's notices on any door. Only columns with defaults: no row changes.
	`ALTER TABLE messages ADD COLUMN ended TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;`,
}

// Open opens (creating it and its folder when needed) the database at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("session database %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "cache_size(-1024)") // KiB per connection
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("session database %s: %w", path, err)
	}
	// A small pool: writers queue on SQLite's lock anyway, and each connection has its own page
	// cache, so fifty busy sessions must not mean fifty connections.
	db.SetMaxOpenConns(2)
	s := &Store{db: db, writer: make(chan struct{}, 1)}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("session database %s: %w", path, err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(f, 0o600) // transcripts are private; SQLite creates its files with the umask's mode
	}
	// spool.go: what the light binary recorded. A problem there does not keep the store shut.
	s.spoolErr = s.ingestSpool(ctx, path)
	return s, nil
}

// SpoolProblem is what went wrong taking in the light binary's spooled sessions when the store
// opened (nil: nothing); the files it names are kept (see ingestSpool).
func (s *Store) SpoolProblem() error { return s.spoolErr }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	// Up to date, as nearly always: a plain read, no write lock (which would queue every command
	// that only reads behind any process writing).
	var version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version == len(migrations) {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil) // immediate: two processes starting at once migrate one after the other
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this qkit knows (%d): upgrade qkit", version, len(migrations))
	}
	for i := version; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if version < len(migrations) {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Create inserts a new session.
func (s *Store) Create(ctx context.Context, r SessionRecord) error {
	err := s.write(ctx, func() error {
		return insertSession(ctx, s.db, r)
	})
	if err != nil {
		return fmt.Errorf("session %s: %w", r.ID, err)
	}
	return nil
}

// execer is a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertSession(ctx context.Context, db execer, r SessionRecord) error {
	tools, _ := json.Marshal(nonNil(r.TrustedTools))
	mcp := r.MCPServers
	if len(mcp) == 0 {
		mcp = json.RawMessage("[]")
	}
	_, err := db.ExecContext(ctx, `INSERT INTO sessions (id, cwd, mcp_servers, model, trusted_tools, title, backend, agent_session, origin, mode, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.Cwd, string(mcp), r.Model, string(tools), r.Title, r.Backend, r.AgentSession,
		r.Origin, r.Mode, r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano())
	return err
}

const sessionColumns = `id, cwd, mcp_servers, model, trusted_tools, title, backend, agent_session, origin, mode, created_at, updated_at`

type scanner interface{ Scan(...any) error }

func scanSession(row scanner) (SessionRecord, error) {
	var r SessionRecord
	var mcp, tools string
	var created, updated int64
	if err := row.Scan(&r.ID, &r.Cwd, &mcp, &r.Model, &tools, &r.Title, &r.Backend, &r.AgentSession, &r.Origin, &r.Mode, &created, &updated); err != nil {
		return r, err
	}
	r.MCPServers = json.RawMessage(mcp)
	_ = json.Unmarshal([]byte(tools), &r.TrustedTools)
	r.CreatedAt, r.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return r, nil
}

// Get returns one session, or an error wrapping ErrSessionNotFound.
func (s *Store) Get(ctx context.Context, id string) (SessionRecord, error) {
	r, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session %s: %w", id, ErrSessionNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("session %s: %w", id, err)
	}
	return r, nil
}

// List returns sessions, most recently updated first; cwd, when not empty, keeps only those in it
// (sessionrec.SameFolder: recorded there or through a link to it). Pages hold at most limit
// sessions; after is the id of the last session of the previous page.
func (s *Store) List(ctx context.Context, cwd string, after string, limit int) ([]SessionRecord, error) {
	query := `SELECT ` + sessionColumns + ` FROM sessions`
	var where []string
	var args []any
	inFolder := func(string) bool { return true }
	if cwd != "" {
		inFolder = sessionrec.InFolder(cwd)
	}
	if after != "" {
		where = append(where, "(updated_at, id) < (SELECT updated_at, id FROM sessions WHERE id = ?)")
		args = append(args, after)
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY updated_at DESC, id DESC"
	if cwd == "" {
		query += " LIMIT ?"
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRecord
	for rows.Next() && len(out) < limit {
		r, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		if inFolder(r.Cwd) {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// SetModel records the session's model.
func (s *Store) SetModel(ctx context.Context, id, model string, now time.Time) error {
	return s.update(ctx, id, `UPDATE sessions SET model = ?, updated_at = ? WHERE id = ?`, model, now.UnixNano(), id)
}

// SetAgentSession records the agent's own id of the session (a new one when the agent lost it).
func (s *Store) SetAgentSession(ctx context.Context, id, agentSession string, now time.Time) error {
	return s.update(ctx, id, `UPDATE sessions SET agent_session = ?, updated_at = ? WHERE id = ?`, agentSession, now.UnixNano(), id)
}

// HasMessages reports whether the session's transcript holds anything yet.
func (s *Store) HasMessages(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = ?)`, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("session %s: %w", id, err)
	}
	return n == 1, nil
}

// SetTrustedTools records the tools the user allowed for the whole session.
func (s *Store) SetTrustedTools(ctx context.Context, id string, tools []string, now time.Time) error {
	b, _ := json.Marshal(nonNil(tools))
	return s.update(ctx, id, `UPDATE sessions SET trusted_tools = ?, updated_at = ? WHERE id = ?`, string(b), now.UnixNano(), id)
}

func (s *Store) update(ctx context.Context, id, query string, args ...any) error {
	var n int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, query, args...)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("session %s: %w", id, ErrSessionNotFound)
	}
	return nil
}

// AppendTurn adds one prompt and its reply to the transcript in a single transaction, so a crash
// keeps either the whole turn or none of it. The first prompt's first line becomes the title.
func (s *Store) AppendTurn(ctx context.Context, id string, t Turn, now time.Time) error {
	return s.write(ctx, func() error { return s.appendTurn(ctx, id, t, now) })
}

func (s *Store) appendTurn(ctx context.Context, id string, t Turn, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	defer tx.Rollback()
	if err := appendTurnTx(ctx, tx, id, t, now); err != nil {
		return err
	}
	return tx.Commit()
}

// appendTurnTx is AppendTurn inside transaction tx.
func appendTurnTx(ctx context.Context, tx *sql.Tx, id string, t Turn, now time.Time) error {
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?`, id).Scan(&next); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	reply := Message{Role: RoleAgent, Text: t.Reply, Tools: t.Tools, Usage: t.Usage, Ended: t.Ended, Truncated: t.Truncated}
	for i, m := range []Message{{Role: RoleUser, Text: t.Prompt, Blocks: t.Blocks}, reply} {
		m.At = now
		if err := insertMessage(ctx, tx, id, next+int64(i), m); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET updated_at = ?, turns = turns + 1, title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?`,
		now.UnixNano(), Title(t.Prompt), id)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", id, ErrSessionNotFound)
	}
	return nil
}

// insertMessage stores message m of session id at position seq (NULL columns for what m lacks).
func insertMessage(ctx context.Context, db execer, id string, seq int64, m Message) error {
	_, err := db.ExecContext(ctx, insertMessages(1), appendMessageArgs(nil, id, seq, m)...)
	return err
}

// insertMessages is the statement that inserts n messages, each with the arguments
// appendMessageArgs gives.
func insertMessages(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO messages (session_id, seq, role, text, blocks, tools, usage, ended, truncated, created_at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	}
	return b.String()
}

// appendMessageArgs appends the arguments of insertMessages for message m of session id at
// position seq (NULL for what m lacks).
func appendMessageArgs(args []any, id string, seq int64, m Message) []any {
	var blocks, tools, usage any
	if len(m.Blocks) > 0 {
		blocks = string(m.Blocks)
	}
	if len(m.Tools) > 0 {
		b, _ := json.Marshal(m.Tools)
		tools = string(b)
	}
	if m.Usage != nil {
		b, _ := json.Marshal(m.Usage)
		usage = string(b)
	}
	return append(args, id, seq, string(m.Role), m.Text, blocks, tools, usage, m.Ended, m.Truncated, m.At.UnixNano())
}

// Messages returns the session's transcript in order.
func (s *Store) Messages(ctx context.Context, id string) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT role, text, blocks, tools, usage, ended, truncated, created_at FROM messages WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var blocks, tools, usage sql.NullString
		var at int64
		if err := rows.Scan(&m.Role, &m.Text, &blocks, &tools, &usage, &m.Ended, &m.Truncated, &at); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		if blocks.Valid {
			m.Blocks = json.RawMessage(blocks.String)
		}
		if tools.Valid {
			_ = json.Unmarshal([]byte(tools.String), &m.Tools) // written by insertMessage
		}
		if usage.Valid {
			m.Usage = &Usage{}
			_ = json.Unmarshal([]byte(usage.String), m.Usage)
		}
		m.At = time.Unix(0, at).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// Title is a session's title: the first non-blank line of its first prompt, at most 80 runes.
func Title(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > 80 {
			line = string(r[:79]) + "…"
		}
		return line
	}
	return ""
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
