//go:build unix

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// TestSessionsKill9 kills `qkit sessions import` and `qkit sessions prune` with SIGKILL at
// several points, each time on a copy of the same store: before the write, while the write
// transaction is spilling pages into the WAL (the file grows before the commit), and at the end.
// Afterwards the store opens, passes SQLite's integrity check, and holds either the whole import or
// prune or nothing of it, with every other session as it was.
func TestSessionsKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds stores of several MB")
	}
	template := t.TempDir()
	db := sessions.Path(filepath.Join(template, "data"))
	long := filepath.Join(template, "long.json")
	seedKillStore(t, db, long)
	before := storeState(t, db)

	// when says when to kill, given the process and its store's WAL file; "" is never (the run ends).
	type killAt struct {
		name   string
		when   func(wal string) bool
		midway bool // the kill is meant to land inside the write transaction
	}
	walOver := func(n int64) func(string) bool {
		return func(wal string) bool { fi, err := os.Stat(wal); return err == nil && fi.Size() > n }
	}
	points := []killAt{
		{"at once", func(string) bool { return true }, false},
		{"the WAL past 256 KiB", walOver(256 << 10), true},
		{"the WAL past 2 MiB", walOver(2 << 20), true},
		{"never", nil, false},
	}
	for _, op := range []string{"import", "prune"} {
		var killedMidway, completed bool
		for _, p := range points {
			home := t.TempDir()
			dbCopy := sessions.Path(filepath.Join(home, ".qkit", "data"))
			copyFile(t, db, dbCopy)
			args := []string{"sessions", "import", long}
			if op == "prune" {
				args = []string{"sessions", "prune", "--older-than", "7d", "--yes"}
			}
			killed := runKilled(t, home, args, dbCopy+"-wal", p.when)
			after := storeState(t, dbCopy)
			added, removed := diffStates(before, after)
			switch {
			case op == "import" && len(removed) == 0 && len(added) == 0:
				t.Logf("%s killed %s: nothing imported", op, p.name)
			case op == "import" && len(removed) == 0 && len(added) == 1 && added[0] == killTurns*2:
				completed = true
				t.Logf("%s killed %s: the whole session imported", op, p.name)
			case op == "prune" && len(added) == 0 && len(removed) == 0:
				t.Logf("%s killed %s: nothing removed", op, p.name)
			case op == "prune" && len(added) == 0 && len(removed) == killOld && !anyRecentRemoved(before, after):
				completed = true
				t.Logf("%s killed %s: every old session removed", op, p.name)
			default:
				t.Fatalf("%s killed %s: torn: %d sessions added (messages %v), %d removed", op, p.name, len(added), added, len(removed))
			}
			if p.when == nil && killed {
				t.Fatalf("%s: the run that was not to be killed was", op)
			}
			if p.midway && killed && len(added) == 0 && len(removed) == 0 {
				killedMidway = true // killed with part of the transaction written: rolled back
			}
		}
		if !completed {
			t.Errorf("%s: no run completed, so the check that a finished one is whole never ran", op)
		}
		if !killedMidway {
			t.Errorf("%s: no kill landed inside the write transaction (the WAL never grew before the commit)", op)
		}
	}
}

const (
	killTurns = 3000 // turns of the session imported
	killOld   = 1500 // sessions prune removes
	killNew   = 5    // sessions it keeps
)

// seedKillStore writes the template store: killOld sessions last used 30 days ago and killNew used
// now, each of two turns of about 1 KB, and long, an export of a session of killTurns turns.
func seedKillStore(t *testing.T, db, long string) {
	ctx := context.Background()
	st, err := sessions.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := strings.Repeat("a line of a reply, as long as a line of code usually is\n", 18)
	now := time.Now()
	for i := range killOld + killNew {
		at := now.Add(-30 * 24 * time.Hour).Add(time.Duration(i) * time.Second)
		if i >= killOld {
			at = now
		}
		id := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
		if err := st.Create(ctx, sessions.SessionRecord{ID: id, Cwd: "/tmp", Backend: sessions.BackendText, Origin: sessions.OriginAsk, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := st.AppendTurn(ctx, id, sessions.Turn{Prompt: "question " + id, Reply: text}, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	e := sessions.Export{Kind: sessions.ExportKind, Version: sessions.ExportVersion,
		Session: sessions.ExportedSession{Title: "long", Cwd: "/tmp", Backend: sessions.BackendText, CreatedAt: now, UpdatedAt: now}}
	for i := range killTurns {
		e.Transcript = append(e.Transcript, sessions.ExportedMessage{Role: sessions.RoleUser, Text: fmt.Sprint("prompt ", i), At: now},
			sessions.ExportedMessage{Role: sessions.RoleAgent, Text: text, At: now})
	}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runKilled runs qkit args with its store in home and SIGKILLs it as soon as when(wal) holds
// (polling every millisecond); a nil when lets it finish. It reports whether the kill ended it.
func runKilled(t *testing.T, home string, args []string, wal string, when func(string) bool) bool {
	t.Helper()
	cmd := exec.Command("qkit", args...)
	cmd.Env = append(cmd.Environ(), "QKIT_HOME="+filepath.Join(home, ".qkit"), "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("qkit %s: %v: %s", strings.Join(args, " "), err, stderr.String())
			}
			return false
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("qkit %s did not end in a minute", strings.Join(args, " "))
		case <-tick.C:
			if when == nil || !when(wal) {
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-done
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
	}
}

// storeState opens the store at db as qkit does (which must work after any kill), checks its
// integrity, and returns each session's count of messages.
func storeState(t *testing.T, db string) map[string]int {
	t.Helper()
	ctx := context.Background()
	st, err := sessions.Open(ctx, db)
	if err != nil {
		t.Fatalf("the store does not open: %v", err)
	}
	defer st.Close()
	list, err := st.Summaries(ctx, sessions.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]int{}
	for _, s := range list {
		msgs, err := st.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2*s.Turns {
			t.Fatalf("session %s: %d messages, %d turns", s.ID, len(msgs), s.Turns)
		}
		state[s.ID] = len(msgs)
	}
	raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var check string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	return state
}

// diffStates returns the message counts of the sessions after holds and before did not, and the
// ids before held and after does not; a session in both must have kept its messages.
func diffStates(before, after map[string]int) (added []int, removed []string) {
	for id, n := range after {
		if m, ok := before[id]; !ok {
			added = append(added, n)
		} else if m != n {
			added = append(added, -1) // changed: reported as torn
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			removed = append(removed, id)
		}
	}
	return added, removed
}

// anyRecentRemoved reports whether a session of the last killNew (used now) is gone.
func anyRecentRemoved(before, after map[string]int) bool {
	for i := killOld; i < killOld+killNew; i++ {
		id := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
		if _, ok := after[id]; !ok {
			return true
		}
	}
	return len(before) == 0
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
