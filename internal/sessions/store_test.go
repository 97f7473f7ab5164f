package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStoreMigrations(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "sub", "qkit.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	var mode string
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(migrations))
	}
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q (%v), want wal", mode, err)
	}
	for _, f := range []string{db, db + "-wal"} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v (%v), want 0600", f, st.Mode().Perm(), err)
		}
	}
	if _, err := s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, db); err == nil || !strings.Contains(err.Error(), "newer than this qkit knows") {
		t.Fatalf("a newer schema opened: %v", err)
	}
}

// TestStoreSharedByTwoServers has two stores (two `acp serve` processes, as two editor windows
// would run) write to one database at once: every turn is kept, each whole and in order.
func TestStoreSharedByTwoServers(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "qkit.db")
	var stores []*Store
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	now := time.Now()
	for _, id := range []string{"shared", "a", "b"} {
		if err := stores[0].Create(ctx, SessionRecord{ID: id, Cwd: "/w", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	const turns = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4*turns)
	for i, s := range stores {
		for _, id := range []string{"shared", string(rune('a' + i))} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < turns; n++ {
					errs <- s.AppendTurn(ctx, id, Turn{Prompt: fmt.Sprintf("q%d-%d", i, n), Reply: fmt.Sprintf("a%d-%d", i, n)}, time.Now())
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := stores[1].Messages(ctx, "shared")
	if err != nil || len(msgs) != 4*turns {
		t.Fatalf("shared session: %d messages (%v), want %d", len(msgs), err, 4*turns)
	}
	for i := 0; i < len(msgs); i += 2 {
		q, a := msgs[i], msgs[i+1]
		if q.Role != RoleUser || a.Role != RoleAgent || "a"+q.Text[1:] != a.Text {
			t.Fatalf("turn %d torn: %+v %+v", i/2, q, a)
		}
	}
	if msgs, _ := stores[0].Messages(ctx, "b"); len(msgs) != 2*turns {
		t.Fatalf("session b: %d messages", len(msgs))
	}
}

func TestStoreListAndErrors(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "qkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Unix(1_700_000_000, 0)
	for i := 0; i < 5; i++ {
		cwd := "/one"
		if i%2 == 1 {
			cwd = "/two"
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := s.Create(ctx, SessionRecord{ID: fmt.Sprint("s", i), Cwd: cwd, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, "", "", 2)
	if err != nil || len(page) != 2 || page[0].ID != "s4" || page[1].ID != "s3" {
		t.Fatalf("first page %+v %v", page, err)
	}
	page, _ = s.List(ctx, "", page[1].ID, 2)
	if len(page) != 2 || page[0].ID != "s2" || page[1].ID != "s1" {
		t.Fatalf("second page %+v", page)
	}
	one, _ := s.List(ctx, "/one", "", 10)
	if len(one) != 3 {
		t.Fatalf("cwd filter: %+v", one)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Get of an unknown id: %v", err)
	}
	if err := s.AppendTurn(ctx, "nope", Turn{Prompt: "q", Reply: "a"}, base); err == nil {
		t.Fatal("AppendTurn to an unknown session succeeded")
	}
	if err := s.SetModel(ctx, "nope", "m", base); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("SetModel of an unknown id: %v", err)
	}
}

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Fix the bug\nin x":        "Fix the bug",
		"\n\n  padded  \nrest":     "padded",
		"":                         "",
		strings.Repeat("é", 100):   strings.Repeat("é", 79) + "…",
		"<resource uri=\"a\"/>\nq": "<resource uri=\"a\"/>",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStoreUpgradesAVersion1Database: a database written before prompts kept their content blocks
// opens, and its messages read back as text.
func TestStoreUpgradesAVersion1Database(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "qkit.db")
	old, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], "PRAGMA user_version = 1",
		`INSERT INTO sessions (id, cwd, created_at, updated_at) VALUES ('s', '/w', 1, 1)`,
		`INSERT INTO messages (session_id, seq, role, text, created_at) VALUES ('s', 1, 'user', 'hi <resource uri="a"/>', 1), ('s', 2, 'agent', 'hello', 1)`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	old.Close()
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AppendTurn(ctx, "s", Turn{Prompt: "x", Blocks: json.RawMessage(`[{"type":"text","text":"x"}]`), Reply: "y"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, "s")
	if err != nil || len(msgs) != 4 || msgs[0].Text != `hi <resource uri="a"/>` || msgs[0].Blocks != nil ||
		string(msgs[2].Blocks) != `[{"type":"text","text":"x"}]` || msgs[3].Blocks != nil {
		t.Fatalf("messages after the upgrade: %+v %v", msgs, err)
	}
}

// TestAgentSession: an ACP-backend session keeps its backend and the agent's own id, which can be
// replaced when the agent lost the session; HasMessages says whether a first prompt went out.
func TestAgentSession(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "qkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if err := s.Create(ctx, SessionRecord{ID: "s", Cwd: "/w", Backend: BackendACP, AgentSession: "a1", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if has, err := s.HasMessages(ctx, "s"); err != nil || has {
		t.Fatalf("HasMessages of a new session: %v %v", has, err)
	}
	if err := s.SetAgentSession(ctx, "s", "a2", now); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, "s", Turn{Prompt: "p", Reply: "r"}, now); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(ctx, "s")
	if err != nil || r.Backend != BackendACP || r.AgentSession != "a2" {
		t.Fatalf("got %+v %v", r, err)
	}
	if has, _ := s.HasMessages(ctx, "s"); !has {
		t.Fatal("HasMessages after a turn is false")
	}
	if err := s.SetAgentSession(ctx, "nope", "x", now); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}
