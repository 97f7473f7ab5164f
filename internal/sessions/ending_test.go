package sessions

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// TestMigration6KeepsEveryRow: a database of schema version 5 (before a reply's ending was kept)
// opens with the new columns, every session and message as it was, the old replies' ending unknown
// (""), and takes new turns with theirs.
func TestMigration6KeepsEveryRow(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "qkit.db")
	old, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{}, migrations[:5]...)
	stmts = append(stmts, "PRAGMA user_version = 5",
		`INSERT INTO sessions (id, cwd, origin, backend, turns, created_at, updated_at) VALUES ('s', '/w', 'acp-serve', 'text', 2, 1, 2)`,
		`INSERT INTO messages (session_id, seq, role, text, blocks, tools, usage, created_at) VALUES
			('s', 1, 'user', 'one', NULL, NULL, NULL, 1),
			('s', 2, 'agent', 'partial'||char(10)||char(10)||'[TIMED OUT after 2s]', NULL, '[{"name":"shell","status":"completed"}]', '{"credits":0.5}', 1),
			('s', 3, 'user', 'two', '[{"type":"text","text":"two"}]', NULL, NULL, 2),
			('s', 4, 'agent', 'whole', NULL, NULL, NULL, 2)`)
	for _, q := range stmts {
		if _, err := old.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	before, _ := json.Marshal(readRows(t, old))
	old.Close()

	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("user_version %d (%v), %d migrations", version, err, len(migrations))
	}
	after, _ := json.Marshal(readRows(t, s.db))
	if !bytes.Equal(before, after) {
		t.Fatalf("the migration changed rows:\n%s\n%s", before, after)
	}
	msgs, err := s.Messages(ctx, "s")
	if err != nil || len(msgs) != 4 {
		t.Fatalf("messages %+v %v", msgs, err)
	}
	for _, m := range msgs {
		if m.Ended != "" || m.Truncated {
			t.Fatalf("an old message got an ending: %+v", m)
		}
	}
	if msgs[1].Usage == nil || msgs[1].Usage.Credits != 0.5 || len(msgs[1].Tools) != 1 || string(msgs[2].Blocks) == "" {
		t.Fatalf("old columns lost: %+v", msgs)
	}
	turn := Turn{Prompt: "three", Reply: "cut", Ended: sessionrec.EndedTimedOut, Truncated: true}
	if err := s.AppendTurn(ctx, "s", turn, time.Unix(3, 0)); err != nil {
		t.Fatal(err)
	}
	msgs, _ = s.Messages(ctx, "s")
	if m := msgs[5]; m.Text != "cut" || m.Ended != sessionrec.EndedTimedOut || !m.Truncated || msgs[4].Ended != "" {
		t.Fatalf("the new turn: %+v", msgs[4:])
	}
}

// readRows is every session and message row, as text, in order.
func readRows(t *testing.T, db *sql.DB) [][]string {
	t.Helper()
	var out [][]string
	for _, q := range []string{
		`SELECT id, cwd, origin, backend, turns, created_at, updated_at FROM sessions ORDER BY id`,
		`SELECT session_id, seq, role, text, COALESCE(blocks, 'NULL'), COALESCE(tools, 'NULL'), COALESCE(usage, 'NULL'), created_at FROM messages ORDER BY session_id, seq`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals)
		}
		rows.Close()
	}
	return out
}

// TestEndingTravels: a reply's ending is kept by the store, exported (as "ended" and "truncated",
// absent when unknown), read back and imported; a file without them (an older qkit's) imports
// with the ending unknown; a file whose ending is not a stop reason's form is refused.
func TestEndingTravels(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	dir := t.TempDir()
	mustCreate(t, s, "src", dir, BackendText, t0)
	for i, turn := range []Turn{
		{Prompt: "one", Reply: "partial", Ended: sessionrec.EndedTimedOut},
		{Prompt: "two", Reply: "line 1\nline 2", Ended: sessionrec.EndedTurn, Truncated: true},
		{Prompt: "three", Reply: "done"},
	} {
		if err := s.AppendTurn(ctx, "src", turn, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.Export(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(e)
	for _, want := range []string{`"text":"partial","ended":"timed_out","at"`, `"ended":"end_turn","truncated":true,"at"`, `"text":"done","at"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the export has no %s:\n%s", want, data)
		}
	}
	parsed, err := ParseExport(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, parsed, "dst", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	msgs, _ := s.Messages(ctx, "dst")
	if msgs[1].Ended != sessionrec.EndedTimedOut || msgs[1].Truncated || msgs[3].Ended != sessionrec.EndedTurn || !msgs[3].Truncated || msgs[5].Ended != "" {
		t.Fatalf("imported %+v", msgs)
	}

	older := `{"kind":"qkit-session","version":1,"session":{"cwd":"/w"},"transcript":[{"role":"user","text":"hi"},{"role":"agent","text":"hello","at":"2024-01-01T00:00:00Z"}]}`
	e, err = ParseExport([]byte(older))
	if err != nil || e.Transcript[1].Ended != "" || e.Transcript[1].Truncated {
		t.Fatalf("an older file: %+v %v", e, err)
	}
	for _, bad := range []string{"TIMED OUT", "timed_out\x1b[2J", strings.Repeat("a", 65)} {
		b, _ := json.Marshal(bad)
		in := `{"kind":"qkit-session","version":1,"session":{"cwd":"/w"},"transcript":[{"role":"agent","text":"x","ended":` + string(b) + `}]}`
		if _, err := ParseExport([]byte(in)); !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "transcript[0].ended") {
			t.Errorf("ended %q: %v", bad, err)
		}
	}
}

// TestShowSaysTheEnding: `sessions show` and the Markdown export say how a reply ended in
// sessionrec.EndingNote's words, after the reply; a reply that ended well, or before qkit kept
// endings, gets nothing.
func TestShowSaysTheEnding(t *testing.T) {
	e := Export{Session: ExportedSession{ID: "s", Cwd: "/w"}, Transcript: []ExportedMessage{
		{Role: RoleUser, Text: "one"},
		{Role: RoleAgent, Text: "partial", Ended: sessionrec.EndedTimedOut},
		{Role: RoleUser, Text: "two"},
		{Role: RoleAgent, Text: "whole", Ended: sessionrec.EndedTurn},
		{Role: RoleUser, Text: "three"},
		{Role: RoleAgent, Text: "old"},
	}}
	note := sessionrec.EndingNote(sessionrec.EndedTimedOut, false, nil)
	var text, md bytes.Buffer
	if err := WriteText(&text, e, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, e, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "partial\n   "+note+"\n") || strings.Count(text.String(), "[qkit:") != 1 {
		t.Errorf("show:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "partial\n\n- Ended: "+note+"\n") || strings.Count(md.String(), "[qkit:") != 1 {
		t.Errorf("markdown:\n%s", md.String())
	}
}
