//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// agentSuite measures `qkit ask` against the fake q:
//   - wrapper overhead: median wall time of `qkit ask --no-context` with q printing one line, minus
//     the fake q run directly with the same argv (the target is the startup suite's, measured with a
//     one-line agent), split into qkit's own process
//     start (`qkit version`) and the rest (config, runner, spawn);
//   - streaming: from q writing its first line to that line reaching qkit's stdout (target <= 1 ms);
//   - memory: q printing 200 MB; qkit's peak RSS (target <= 40 MB; the peer took ~746 MiB).
//
// The fake acts as q 1.19.7 (FAKEQ_FLAVOUR=q: the "> " prefix, colours and welcome text, and no
// acp subcommand, so agent.backend auto settles on the text runner these rows are about).
func agentSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "agent")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	q := filepath.Join(b.fakeq, "q")
	env := b.env(home, "FAKEQ_FLAVOUR=q", "FAKEQ_OUTPUT=the answer\\n")
	const n = 50
	meds, err := interleaved(n, env, home,
		[]string{q, "chat", "--no-interactive", "hello"},
		[]string{b.qkit, "ask", "--no-context", "hello"},
		[]string{b.qkit, "version"})
	if err != nil {
		return nil, err
	}
	direct, ask, version := meds[0], meds[1], meds[2]
	latency, err := streamLatency(b, home, 30, "FAKEQ_FLAVOUR=q")
	if err != nil {
		return nil, err
	}
	rss, _, err := askPeakRSS(b, home, "FAKEQ_FLAVOUR=q", "FAKEQ_BYTES=200000000")
	if err != nil {
		return nil, fmt.Errorf("200 MB run: %v", err)
	}
	return []figure{
		info("agent: fake q direct median", ms(direct), "ms"),
		info("agent: qkit ask --no-context median", ms(ask), "ms"),
		info("agent: ask wrapper overhead over the fake q (median; the target is startup's, with a one-line agent)", ms(ask-direct), "ms"),
		info("agent: of which qkit's process start (qkit version median)", ms(version), "ms"),
		info("agent: of which the runner (ask - version - q direct)", ms(ask-version-direct), "ms"),
		atMost("agent: streaming latency q line -> qkit stdout (median)", float64(latency.Microseconds())/1000, "ms", 1),
		atMost("agent: peak RSS, q printing 200 MB (qkit and q, max)", float64(rss)/(1<<20), "MiB", 40),
	}, nil
}

// streamLatency runs qkit ask (with the extra environment env, which picks the backend and the
// fake's flavour) with the agent sending one line or chunk, then pausing: the fake writes the time
// it sent the first one to a file, and the time the text reached qkit's stdout is taken here.
func streamLatency(b *bench, home string, n int, env ...string) (time.Duration, error) {
	stamp := filepath.Join(home, "first-stamp")
	var lat []time.Duration
	for i := 0; i < n; i++ {
		_ = os.Remove(stamp)
		c := exec.Command(b.qkit, "ask", "--no-context", "hello")
		c.Env = b.env(home, slices.Concat(env, []string{"FAKEQ_LINES=2", "FAKEQ_INTERVAL=30ms", "FAKEQ_FIRST_STAMP=" + stamp})...)
		c.Dir = home
		out, err := c.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := c.Start(); err != nil {
			return 0, err
		}
		r := bufio.NewReader(out)
		if _, err := r.ReadString('\n'); err != nil {
			_ = c.Wait()
			return 0, fmt.Errorf("no first line: %v", err)
		}
		arrived := time.Now()
		_, _ = io.Copy(io.Discard, r)
		if err := c.Wait(); err != nil {
			return 0, err
		}
		data, err := os.ReadFile(stamp)
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, err
		}
		lat = append(lat, arrived.Sub(time.Unix(0, ns)))
	}
	return median(lat), nil
}

// askPeakRSS runs `qkit ask --no-context hello` with env (the fake streaming a lot) and returns
// the peak RSS of qkit and its children, and how long the run took.
func askPeakRSS(b *bench, home string, env ...string) (int64, time.Duration, error) {
	c := exec.Command(b.qkit, "ask", "--no-context", "hello")
	c.Env, c.Dir = b.env(home, env...), home
	c.Stdout = io.Discard
	var errb strings.Builder
	c.Stderr = &errb
	start := time.Now()
	rss, err := peakRSS(c)
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, errb.String())
	}
	return rss, time.Since(start), nil
}
