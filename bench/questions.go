//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// questionsSuite measures ask_user_questions in `qkit mcp serve` with the Go SDK's client:
//   - answer latency: from `qkit questions answer` (a separate process) committing the answers
//     (status.json renamed into place, seen by a watcher of the bench's own) to the client receiving
//     the tool result, median
//     of 20 calls on one connection (the peer polls every 200 ms: 71-112 ms medians);
//   - CPU used by a server waiting on 100 pending calls over 10 idle seconds (the peer: 0.07-0.13 s
//     for one waiting call).
func questionsSuite(b *bench) ([]figure, error) {
	ctx := context.Background()
	args := langArgs
	home, st, s, err := startQuestions(ctx, b, "questions")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var lat, proc []time.Duration
	for i := 0; i < 20; i++ {
		got := askInBackground(ctx, s, args)
		p, err := st.WaitPending(ctx, questions.WaitPendingOptions{Timeout: 10 * time.Second})
		if err != nil {
			return nil, err
		}
		// A person takes a while to answer: the phase against any timer in the server is random.
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		// The commit is the rename of status.json into place. It is timed by a watcher of our own,
		// which sees it within a few microseconds (file times are no use: they are set before the
		// file's fsync, not at the rename).
		committed, err := watchCommit(filepath.Join(st.Dir(), p.ID))
		if err != nil {
			return nil, err
		}
		start := time.Now()
		c := exec.Command(b.qkit, "questions", "answer", p.ID, "--answer", "1=Go")
		c.Env = b.env(home)
		if out, err := c.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("qkit questions answer: %v: %s", err, out)
		}
		r := <-got
		if r.err != nil || r.res.IsError {
			return nil, fmt.Errorf("ask_user_questions: %v %+v", r.err, r.res)
		}
		at, ok := <-committed
		if !ok {
			return nil, fmt.Errorf("the commit of %s was not seen", p.ID)
		}
		lat = append(lat, r.at.Sub(at))
		proc = append(proc, r.at.Sub(start))
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}

	cpu, err := idleCPU(ctx, b, home, st, args, 100, false)
	if err != nil {
		return nil, err
	}
	cpuProgress, err := idleCPU(ctx, b, home, st, args, 100, true)
	if err != nil {
		return nil, err
	}
	return []figure{
		atMost("questions: answer committed -> client has the result (median of 20)", ms(median(lat)), "ms", 5),
		info("questions: answer committed -> result, worst of 20", ms(maxDuration(lat)), "ms"),
		info("questions: qkit questions answer started -> result (median, incl. process start)", ms(median(proc)), "ms"),
		atMost("questions: server CPU over 10 idle s with 100 pending calls", cpu, "s", 0.05),
		info("questions: the same, each call with a progress token (a notification per call every 5 s)", cpuProgress, "s"),
	}, nil
}

// langArgs are the arguments of the ask_user_questions call the questions suites make: one
// question, two options.
var langArgs = map[string]any{"questions": []any{map[string]any{
	"question": "Which language should we use?", "header": "Language",
	"options": []any{map[string]any{"label": "Go", "description": "static binary"}, map[string]any{"label": "TypeScript"}},
}}}

// startQuestions is the start of the file-store questions suites: the suite's home under the
// bench's folder (see fileStoreHome) and a `qkit mcp serve` running there.
func startQuestions(ctx context.Context, b *bench, name string) (string, *dirstore.Store, *server, error) {
	home, st, err := fileStoreHome(b, name)
	if err != nil {
		return "", nil, nil, err
	}
	s, err := startServer(ctx, b, home)
	if err != nil {
		_ = st.Close()
		return "", nil, nil, err
	}
	return home, st, s, nil
}

// askResult is one ask_user_questions call's result and when the client had it.
type askResult struct {
	at  time.Time
	res *mcp.CallToolResult
	err error
}

// askInBackground makes one ask_user_questions call on s and delivers its result when it ends.
func askInBackground(ctx context.Context, s *server, args map[string]any) <-chan askResult {
	got := make(chan askResult, 1)
	go func() {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args})
		got <- askResult{time.Now(), res, err}
	}()
	return got
}

// fileStoreHome makes the suite's home under the bench's folder and opens the file store qkit uses
// there.
func fileStoreHome(b *bench, name string) (string, *dirstore.Store, error) {
	home := filepath.Join(b.dir, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return "", nil, err
	}
	st, err := dirstore.New(filepath.Join(home, ".qkit", "state", "questions"), questions.Options{})
	return home, st, err
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// idleCPU starts a server, makes n calls that stay pending (with progress tokens when progress is
// set), lets it settle, and returns the CPU seconds (user + system) it uses over the next 10 seconds.
// The calls are then rejected.
func idleCPU(ctx context.Context, b *bench, home string, st *dirstore.Store, args map[string]any, n int, progress bool) (float64, error) {
	s, err := startServer(ctx, b, home)
	if err != nil {
		return 0, err
	}
	done := make(chan error, n)
	for i := 0; i < n; i++ {
		params := &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args}
		if progress {
			params.SetProgressToken(fmt.Sprintf("call-%d", i))
		}
		go func() {
			_, err := s.cs.CallTool(ctx, params)
			done <- err
		}()
	}
	var pending []*questions.Session
	for deadline := time.Now().Add(30 * time.Second); len(pending) < n; {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("only %d of %d calls pending", len(pending), n)
		}
		time.Sleep(50 * time.Millisecond)
		all, err := st.List()
		if err != nil {
			return 0, err
		}
		pending = pending[:0]
		for _, p := range all {
			if p.Status.Status == questions.Pending {
				pending = append(pending, p)
			}
		}
	}
	time.Sleep(3 * time.Second) // settle: start-up, GC
	before, err := cpuTicks(s.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	time.Sleep(10 * time.Second)
	after, err := cpuTicks(s.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	for _, p := range pending {
		if _, err := st.Reject(p.ID, "bench", ""); err != nil {
			return 0, err
		}
	}
	for i := 0; i < n; i++ {
		if err := <-done; err != nil {
			return 0, err
		}
	}
	if _, err := s.close(); err != nil {
		return 0, err
	}
	return float64(after-before) / 100, nil // CLK_TCK is 100 on Linux
}

// watchCommit reports when status.json is renamed into place in dir.
func watchCommit(dir string) (<-chan time.Time, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, err
	}
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		defer w.Close()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-w.Events:
				if filepath.Base(ev.Name) == dirstore.StatusFile && ev.Has(fsnotify.Create) {
					out <- time.Now()
					return
				}
			case <-timeout:
				return
			}
		}
	}()
	return out, nil
}
