//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// sessionsSuite measures `qkit sessions` as a person runs it, process start-up included (medians):
//   - list over 10,000 sessions (each with one turn), target 50 ms, with the part of it that is
//     process start-up;
//   - show of a 1,000-turn session, target 50 ms;
//   - export of that session to a file and import of the file, target 200 ms for the two.
func sessionsSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "sessions")
	env := b.env(home)
	ctx := context.Background()
	st, err := sessions.Open(ctx, sessions.Path(filepath.Join(home, ".qkit", "data")))
	if err != nil {
		return nil, err
	}
	base := time.Now().Add(-24 * time.Hour)
	long := "long-session"
	if err := seedSessions(ctx, st, home, base, long); err != nil {
		st.Close()
		return nil, err
	}
	st.Close()
	const runs = 15
	// `qkit version` interleaved with the list: process start-up, which the list's figure
	// includes, measured under the same load; the difference is the list's own time.
	meds, err := interleaved(runs, env, home, []string{b.qkit, "sessions", "list"}, []string{b.qkit, "version"})
	if err != nil {
		return nil, err
	}
	list, start := meds[0], meds[1]
	show, err := timeRuns(runs, env, home, b.qkit, "sessions", "show", long)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(home, "long.json")
	trip, err := timeRuns(runs, env, home, "sh", "-c", fmt.Sprintf("%s sessions export %s -o %s && %s sessions import %s >/dev/null",
		b.qkit, long, file, b.qkit, file))
	if err != nil {
		return nil, err
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return []figure{
		atMost("sessions: list over 10,000 sessions (median of 15, process included)", ms(list), "ms", 50),
		info("sessions: of which process start (qkit version, interleaved)", ms(start), "ms"),
		info("sessions: list's own time (list minus qkit version)", ms(list-start), "ms"),
		atMost("sessions: show of a 1,000-turn session (median of 15)", ms(show), "ms", 50),
		atMost("sessions: export then import of that session (median of 15)", ms(trip), "ms", 200),
	}, nil
}

// seedSessions fills st with 10,000 one-turn sessions in home and one session long of 1,000 turns.
func seedSessions(ctx context.Context, st *sessions.Store, home string, base time.Time, long string) error {
	for i := range 10_000 {
		at := base.Add(time.Duration(i) * time.Second)
		id := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
		if err := st.Create(ctx, sessions.SessionRecord{ID: id, Cwd: home, Backend: sessions.BackendText, Origin: sessions.OriginACPServe, CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if err := st.AppendTurn(ctx, id, sessions.Turn{Prompt: fmt.Sprintf("question %d about the code", i), Reply: "an answer"}, at); err != nil {
			return err
		}
	}
	if err := st.Create(ctx, sessions.SessionRecord{ID: long, Cwd: home, Backend: sessions.BackendACP, Origin: sessions.OriginAsk, CreatedAt: base, UpdatedAt: base}); err != nil {
		return err
	}
	reply := strings.Repeat("A reply line of a typical length, with some code in it: x := f(y)\n", 10)
	for i := range 1000 {
		t := sessions.Turn{Prompt: fmt.Sprintf("prompt %d: change the function", i), Reply: reply,
			Tools: []sessions.ToolCall{{Name: "fs_write", Status: "completed"}}, Usage: &sessions.Usage{Credits: 0.1, ContextPercent: 12}}
		if err := st.AppendTurn(ctx, long, t, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(home, ".qkit", "config"), 0o700)
}
