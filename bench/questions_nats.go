//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/natsstore"
)

// questionsNATSSuite measures ask_user_questions with questions.store=nats against the official
// NATS server (built from the module cache, run as its own process on loopback with JetStream):
//   - answer -> MCP tool result: the bench answers through its own connection to the bucket (the
//     person's machine) and times from the answer's write to the Go SDK client holding the result,
//     median of 20; and the same from starting a `qkit questions answer` process;
//   - with 1,000 pending calls waiting in one `qkit mcp serve`: `qkit questions list --json` time,
//     the waiting server's resident memory and its CPU over 10 idle seconds; the file store's
//     figures for the same load beside them;
//   - the size of the qkit binary, which links the NATS client but not the server.
func questionsNATSSuite(b *bench) ([]figure, error) {
	ctx := context.Background()
	url, stop, err := startNATSServer(b)
	if err != nil {
		return nil, err
	}
	defer stop()
	natsEnv := []string{"QKIT_QUESTIONS_STORE=nats", "QKIT_QUESTIONS_NATS_URL=" + url, "QKIT_QUESTIONS_INSTALLATION=bench"}
	person, err := natsstore.New(natsstore.Config{URL: url, Installation: "bench", Retention: time.Hour}, questions.Options{})
	if err != nil {
		return nil, err
	}
	defer person.Close()
	args := langArgs

	home := filepath.Join(b.dir, "questions-nats")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	s, err := startServer(ctx, b, home, natsEnv...)
	if err != nil {
		return nil, err
	}
	var lat, proc []time.Duration
	for i := 0; i < 40; i++ {
		// Different questions each time, so no call takes over an earlier call's set.
		a := map[string]any{"questions": []any{map[string]any{
			"question": fmt.Sprintf("Which language should we use for part %d?", i), "header": "Language",
			"options": args["questions"].([]any)[0].(map[string]any)["options"],
		}}}
		got := askInBackground(ctx, s, a)
		p, err := person.WaitPending(ctx, questions.WaitPendingOptions{Timeout: 10 * time.Second})
		if err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond) // a person takes a moment
		start := time.Now()
		if i%2 == 0 {
			if _, err := person.Answer(p.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}}, ""); err != nil {
				return nil, err
			}
		} else {
			c := exec.Command(b.qkit, "questions", "answer", p.ID, "--answer", "1=Go")
			c.Env = b.env(filepath.Join(home, "person"), natsEnv...)
			if out, err := c.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("qkit questions answer: %v: %s", err, out)
			}
		}
		r := <-got
		if r.err != nil || r.res.IsError {
			return nil, fmt.Errorf("ask_user_questions: %v %+v", r.err, r.res)
		}
		if i%2 == 0 {
			lat = append(lat, r.at.Sub(start))
		} else {
			proc = append(proc, r.at.Sub(start))
		}
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}

	natsLoad, err := pendingLoad(ctx, b, filepath.Join(b.dir, "questions-nats-1000"), natsEnv, loadN)
	if err != nil {
		return nil, fmt.Errorf("1,000 pending over NATS: %w", err)
	}
	fileLoad, err := pendingLoad(ctx, b, filepath.Join(b.dir, "questions-file-1000"), nil, loadN)
	if err != nil {
		return nil, fmt.Errorf("1,000 pending in files: %w", err)
	}
	fi, err := os.Stat(b.qkit)
	if err != nil {
		return nil, err
	}
	return []figure{
		atMost("questions/nats: answer written -> MCP tool result, loopback (median of 20)", ms(median(lat)), "ms", 10),
		info("questions/nats: the same, worst of 20", ms(maxDuration(lat)), "ms"),
		info("questions/nats: qkit questions answer started -> result (median of 20, incl. process start)", ms(median(proc)), "ms"),
		info("questions/nats: qkit questions list --json with 1,000 pending (median of 5)", ms(natsLoad.list), "ms"),
		info("questions/nats: RSS of mcp serve waiting on 1,000 calls", float64(natsLoad.rss)/(1<<20), "MiB"),
		info("questions/nats: its CPU over 10 idle s", natsLoad.cpu, "s"),
		info("questions/file: qkit questions list --json with 1,000 pending (median of 5)", ms(fileLoad.list), "ms"),
		info("questions/file: RSS of mcp serve waiting on 1,000 calls", float64(fileLoad.rss)/(1<<20), "MiB"),
		info("questions/file: its CPU over 10 idle s", fileLoad.cpu, "s"),
		info("qkit binary size (-s -w; links the NATS client, not the server)", float64(fi.Size())/(1<<20), "MiB"),
	}, nil
}

type load struct {
	list time.Duration
	rss  int64
	cpu  float64
}

// pendingLoad starts a server in home with env, makes n calls that stay pending, and measures
// `qkit questions list --json`, the server's resident memory and its idle CPU. The server is killed
// afterwards; its sets are left for the scratch folder's removal.
func pendingLoad(ctx context.Context, b *bench, home string, env []string, n int) (load, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return load{}, err
	}
	s, err := startServer(ctx, b, home, env...)
	if err != nil {
		return load{}, err
	}
	defer func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() }()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < n; i++ {
		a := map[string]any{"questions": []any{map[string]any{
			"question": fmt.Sprintf("Pending question %d?", i), "header": "Load",
			"options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}},
		}}}
		go func() { _, _ = s.cs.CallTool(cctx, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: a}) }()
	}
	penv := b.env(home, env...)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := runOut(penv, home, b.qkit, "questions", "list", "--json")
		if err != nil {
			return load{}, err
		}
		c := strings.Count(out, `"status": "pending"`)
		fmt.Fprintf(os.Stderr, "bench: %d pending\n", c)
		if c >= n {
			break
		}
		if time.Now().After(deadline) {
			return load{}, fmt.Errorf("the calls did not all become pending")
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // settle: start-up, GC
	before, err := cpuTicks(s.cmd.Process.Pid)
	if err != nil {
		return load{}, err
	}
	time.Sleep(10 * time.Second)
	after, err := cpuTicks(s.cmd.Process.Pid)
	if err != nil {
		return load{}, err
	}
	rss, err := vmRSS(s.cmd.Process.Pid)
	if err != nil {
		return load{}, err
	}
	list, err := timeRuns(5, penv, home, b.qkit, "questions", "list", "--json")
	if err != nil {
		return load{}, err
	}
	return load{list: list, rss: rss, cpu: float64(after-before) / 100}, nil
}

// vmRSS is the resident set of pid now, in bytes.
func vmRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS") }

// startNATSServer runs the official NATS server the tests run (internal/natstest: the version go.mod
// pins as a tool) on a free loopback port with JetStream in the scratch folder.
func startNATSServer(b *bench) (url string, stop func(), err error) {
	srv, err := natstest.Start(natstest.Options{JetStream: true, StoreDir: filepath.Join(b.dir, "nats-data")})
	if err != nil {
		return "", nil, err
	}
	return srv.URL(), srv.Stop, nil
}

var loadN = func() int {
	n, err := strconv.Atoi(os.Getenv("QKIT_BENCH_LOAD"))
	if err != nil {
		return 1000
	}
	return n
}()
