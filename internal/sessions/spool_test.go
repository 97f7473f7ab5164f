package sessions

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// TestOpenTakesInTheSpool: exchanges spooled by a process without SQLite are in the store once it
// opens, in the order they were spooled, and their files are gone; a file taken in twice (a crash
// before its removal) is recorded once, and an unreadable one is kept aside as *.bad.
func TestOpenTakesInTheSpool(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spool := sessionrec.Spool{Dir: sessionrec.SpoolDir(dir)}
	at := time.Unix(1700000000, 123456789)
	first := Exchange{AgentSession: "agent-1", Origin: OriginAsk, Cwd: dir, Backend: BackendACP, Turn: Turn{Prompt: "one", Reply: "1"}}
	id, err := spool.Record(ctx, first, at)
	if err != nil || id != "agent-1" {
		t.Fatalf("Record: %q, %v", id, err)
	}
	second := first
	second.Turn = Turn{Prompt: "two", Reply: "2"}
	if _, err := spool.Record(ctx, second, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	chatID, err := spool.Record(ctx, Exchange{Origin: OriginAsk, Cwd: dir, Turn: Turn{Prompt: "chat", Reply: "c"}}, at.Add(2*time.Second))
	if err != nil || chatID == "" {
		t.Fatalf("Record without an agent session: %q, %v", chatID, err)
	}
	files, _ := sessionrec.ReadSpool(spool.Dir)
	if len(files) != 3 {
		t.Fatalf("spooled %d files, want 3", len(files))
	}
	kept := filepath.Join(t.TempDir(), "copy.json")
	data, _ := os.ReadFile(files[0].Path)
	_ = os.WriteFile(kept, data, 0o600)
	if err := os.WriteFile(filepath.Join(spool.Dir, "00000000000000000000-junk.json"), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(ctx, "agent-1")
	if err != nil || len(msgs) != 4 || msgs[0].Text != "one" || msgs[2].Text != "two" {
		t.Fatalf("agent-1's transcript: %v %+v", err, msgs)
	}
	if msgs, err := st.Messages(ctx, chatID); err != nil || len(msgs) != 2 {
		t.Fatalf("the chat session %s: %v %+v", chatID, err, msgs)
	}
	st.Close()
	if files, _ := sessionrec.ReadSpool(spool.Dir); len(files) != 0 {
		t.Fatalf("%d spool files left after taking them in", len(files))
	}
	if _, err := os.Stat(filepath.Join(spool.Dir, "00000000000000000000-junk.json.bad")); err != nil {
		t.Errorf("the unreadable file was not kept aside: %v", err)
	}

	// The first file again, as a crash between the commit and its removal would leave it.
	if err := os.Rename(kept, filepath.Join(spool.Dir, filepath.Base(files[0].Path))); err != nil {
		t.Fatal(err)
	}
	st, err = Open(ctx, Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if msgs, err := st.Messages(ctx, "agent-1"); err != nil || len(msgs) != 4 {
		t.Fatalf("a file taken in twice: %v, %d messages, want 4", err, len(msgs))
	}
}

// TestSpoolProblemsKeepTheStoreOpen: nothing in the spool keeps the store shut or loses a file. A
// file of a newer format stays where it is for a qkit that reads it; one the store refuses to
// record is set aside as *.bad while the others are taken in; Open succeeds and SpoolProblem says
// what happened.
func TestSpoolProblemsKeepTheStoreOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	// A store that refuses one prompt, as a full disk or a constraint would refuse a record.
	if _, err := st.db.ExecContext(ctx, `CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.text = 'refuse me'
		BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	st.Close()

	spool := sessionrec.Spool{Dir: sessionrec.SpoolDir(dir)}
	at := time.Unix(1700000000, 0)
	refused, err := spool.Record(ctx, Exchange{Origin: OriginAsk, Cwd: dir, Turn: Turn{Prompt: "refuse me", Reply: "r"}}, at)
	if err != nil {
		t.Fatal(err)
	}
	good, err := spool.Record(ctx, Exchange{Origin: OriginAsk, Cwd: dir, Turn: Turn{Prompt: "keep me", Reply: "k"}}, at.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(spool.Dir, "99999999999999999999-newer.json")
	if err := os.WriteFile(newer, []byte(`{"version": 99, "exchange": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}

	st, err = Open(ctx, Path(dir))
	if err != nil {
		t.Fatalf("a spool problem kept the store shut: %v", err)
	}
	defer st.Close()
	if msgs, err := st.Messages(ctx, good); err != nil || len(msgs) != 2 {
		t.Errorf("the good file was not taken in: %v %+v", err, msgs)
	}
	if msgs, _ := st.Messages(ctx, refused); len(msgs) != 0 {
		t.Errorf("the refused file's turn was recorded: %+v", msgs)
	}
	if st.SpoolProblem() == nil {
		t.Errorf("no SpoolProblem")
	}
	if _, err := os.Stat(newer); err != nil {
		t.Errorf("the newer file was not left in place: %v", err)
	}
	bad, _ := filepath.Glob(filepath.Join(spool.Dir, "*.json.bad"))
	if len(bad) != 1 {
		t.Errorf("set aside %v, want the refused file alone", bad)
	}
}
