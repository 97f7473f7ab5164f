package sessions

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// ExportKind and ExportVersion mark a session export file. A change that an older qkit would
// misread takes a new version; ParseExport refuses versions it does not know.
const (
	ExportKind    = "qkit-session"
	ExportVersion = 1
)

// MaxExportSize bounds what ParseExport reads: far above any transcript the store keeps (a reply is
// cut at agent.max_response_size), far below what would hurt to hold in memory.
const MaxExportSize = 256 << 20

// ErrBadExport is wrapped by every error of ParseExport: the file is not a session export this
// qkit reads.
var ErrBadExport = errors.New("not a qkit session export")

// Export is a session as a portable document: `sessions export --format json` writes it,
// `sessions show --json` prints it, `sessions import` reads it. The agent's own session id and
// the MCP servers are left out: the first means nothing on another machine, the second can carry
// tokens (headers, environment).
type Export struct {
	Kind       string            `json:"kind"`
	Version    int               `json:"version"`
	Session    ExportedSession   `json:"session"`
	Transcript []ExportedMessage `json:"transcript"`
}

// ExportedSession is a session's settings in an Export. Store.Import takes from a file only its
// title, folder, backend and model: not its id, origin, times or turn count (it sets its own),
// and not its mode or trusted tools (a file grants nothing).
type ExportedSession struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Cwd          string    `json:"cwd"`
	Backend      string    `json:"backend"`
	Model        string    `json:"model"`
	Mode         string    `json:"mode"`
	TrustedTools []string  `json:"trusted_tools"`
	Origin       string    `json:"origin"`
	Turns        int       `json:"turns"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// ExportedMessage is one transcript entry in an Export.
type ExportedMessage struct {
	Role   Role            `json:"role"`
	Text   string          `json:"text"`
	Blocks json.RawMessage `json:"blocks,omitempty"`
	Tools  []ToolCall      `json:"tools,omitempty"`
	Usage  *Usage          `json:"usage,omitempty"`
	// Ended and Truncated say how a reply's turn ended (sessionrec.Ending); absent for prompts,
	// for replies stored before qkit kept it, and in files of older qkits (read as unknown).
	Ended     string    `json:"ended,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	At        time.Time `json:"at"`
}

// Export reads session id (an unambiguous prefix will do) as an Export.
func (s *Store) Export(ctx context.Context, id string) (Export, error) {
	r, err := s.Find(ctx, id)
	if err != nil {
		return Export{}, err
	}
	msgs, err := s.Messages(ctx, r.ID)
	if err != nil {
		return Export{}, err
	}
	e := Export{Kind: ExportKind, Version: ExportVersion, Session: ExportedSession{
		ID: r.ID, Title: r.Title, Cwd: r.Cwd, Backend: r.Backend, Model: r.Model, Mode: r.Mode,
		TrustedTools: nonNil(r.TrustedTools), Origin: r.Origin, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, Transcript: make([]ExportedMessage, 0, len(msgs))}
	for _, m := range msgs {
		if m.Role == RoleUser {
			e.Session.Turns++
		}
		e.Transcript = append(e.Transcript, ExportedMessage(m))
	}
	return e, nil
}

// ParseExport reads an export file's content. Anything else (not JSON, cut short, another kind,
// another version, a transcript the store could not hold) is an error wrapping ErrBadExport that
// says what is wrong.
func ParseExport(data []byte) (Export, error) {
	bad := func(format string, args ...any) (Export, error) {
		return Export{}, fmt.Errorf("%w: %s", ErrBadExport, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxExportSize {
		return bad("%d bytes, more than the %d MiB an export can have", len(data), MaxExportSize>>20)
	}
	// One decoding in the usual case (an export of this version): a file this qkit reads.
	var file struct {
		Kind       *string           `json:"kind"`
		Version    *int              `json:"version"`
		Session    ExportedSession   `json:"session"`
		Transcript []ExportedMessage `json:"transcript"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&file)
	if err == nil && len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		err = errors.New("more after the JSON document")
	}
	// Otherwise (and for a missing kind or version) the kind and version are looked at first, so
	// a file of a later version is named as such rather than failing on a field that changed.
	if err != nil || file.Kind == nil || file.Version == nil {
		var head struct {
			Kind    *string `json:"kind"`
			Version *int    `json:"version"`
		}
		if herr := json.Unmarshal(data, &head); herr != nil {
			return bad("%v", jsonProblem(herr))
		}
		file.Kind, file.Version = head.Kind, head.Version
	}
	if file.Kind == nil || *file.Kind != ExportKind {
		return bad(`no "kind": %q field`, ExportKind)
	}
	if file.Version == nil {
		return bad(`no "version" field`)
	}
	if *file.Version != ExportVersion {
		return bad("version %d; this qkit reads version %d (a newer qkit wrote it?)", *file.Version, ExportVersion)
	}
	if err != nil {
		return bad("%v", jsonProblem(err))
	}
	e := Export{Kind: ExportKind, Version: ExportVersion, Session: file.Session, Transcript: file.Transcript}
	if e.Session.Cwd == "" || !filepath.IsAbs(e.Session.Cwd) {
		return bad("session.cwd %q is not an absolute path", e.Session.Cwd)
	}
	switch e.Session.Backend {
	case "", BackendText, BackendACP:
	default:
		return bad("session.backend %q: expected %s or %s", e.Session.Backend, BackendText, BackendACP)
	}
	for i, m := range e.Transcript {
		if m.Role != RoleUser && m.Role != RoleAgent {
			return bad("transcript[%d].role %q: expected user or agent", i, m.Role)
		}
		if !sessionrec.ValidEnding(m.Ended) {
			return bad("transcript[%d].ended %q: expected a stop reason such as end_turn or timed_out", i, m.Ended)
		}
		if len(m.Blocks) > 0 {
			var blocks []json.RawMessage
			if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
				return bad("transcript[%d].blocks is not a JSON array", i)
			}
		}
	}
	return e, nil
}

// jsonProblem words a decoding error for a person: encoding/json's "unexpected end of JSON input"
// (Unmarshal) and io.ErrUnexpectedEOF (Decoder) mean the file was cut short.
func jsonProblem(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syn) && strings.Contains(syn.Error(), "unexpected end of JSON input"):
		return errors.New("the JSON ends early (a truncated file?)")
	case errors.As(err, &syn):
		return fmt.Errorf("not valid JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		return fmt.Errorf("field %s: expected %s, found JSON %s", typ.Field, typ.Type, typ.Value)
	}
	return err
}

// Import stores e as a new session id (origin import), its transcript and settings in one
// transaction: a crash or a kill leaves the whole session or nothing. Its history is e's
// transcript, so acp serve's session/load replays it and the next prompt carries it; it has no
// agent session yet (the agent's ids do not travel), so on the ACP backend the next load opens a
// new one with that history. It returns the stored session with the turns it stored (the file's
// own "turns" is not read).
//
// The file grants nothing: it may come from another machine or from anyone, and nobody here
// allowed what it says. Its trusted tools are dropped (acp serve's text path passes a session's
// trusted tools to the agent as --trust-tools on every prompt), and so is its mode (a mode is one
// of the agent's profiles, kiro's agents, each with tools of its own allowed). The folder, model,
// backend and title are kept: they say where and with what the conversation goes on, not what the
// agent may do there (acp serve loads a session only from its own folder).
func (s *Store) Import(ctx context.Context, e Export, id string, now time.Time) (Summary, error) {
	r := SessionRecord{
		ID: id, Cwd: e.Session.Cwd, Model: e.Session.Model, Title: e.Session.Title, Backend: e.Session.Backend,
		Origin: OriginImport, CreatedAt: now, UpdatedAt: now,
	}
	if r.Backend == "" {
		r.Backend = BackendText
	}
	turns := 0
	for _, m := range e.Transcript {
		if m.Role == RoleUser {
			if r.Title == "" {
				r.Title = Title(m.Text)
			}
			turns++
		}
	}
	err := s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := insertSession(ctx, tx, r); err != nil {
			return err
		}
		if err := insertTranscript(ctx, tx, id, e.Transcript, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET turns = ? WHERE id = ?`, turns, id); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return Summary{}, fmt.Errorf("importing session %s: %w", id, err)
	}
	return Summary{SessionRecord: r, Turns: turns, FolderGone: FolderGone(r.Cwd)}, nil
}

// importBatch is how many messages one INSERT of insertTranscript stores: a statement per message
// (parsed, planned and run for each) was most of an import's time.
const importBatch = 64

// insertTranscript stores msgs as the transcript of session id, inside tx, importBatch messages a
// statement; a message without a time gets now.
func insertTranscript(ctx context.Context, tx *sql.Tx, id string, msgs []ExportedMessage, now time.Time) error {
	var full *sql.Stmt
	args := make([]any, 0, 8*importBatch)
	for start := 0; start < len(msgs); start += importBatch {
		batch := msgs[start:min(start+importBatch, len(msgs))]
		args = args[:0]
		for i, m := range batch {
			at := m.At
			if at.IsZero() {
				at = now
			}
			msg := Message{Role: m.Role, Text: m.Text, Blocks: m.Blocks, Tools: m.Tools, Usage: m.Usage, Ended: m.Ended, Truncated: m.Truncated, At: at}
			args = appendMessageArgs(args, id, int64(start+i+1), msg)
		}
		if len(batch) < importBatch {
			if _, err := tx.ExecContext(ctx, insertMessages(len(batch)), args...); err != nil {
				return err
			}
			continue
		}
		if full == nil {
			var err error
			if full, err = tx.PrepareContext(ctx, insertMessages(importBatch)); err != nil {
				return err
			}
			defer full.Close()
		}
		if _, err := full.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
