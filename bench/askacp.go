//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// askACPSuite measures `qkit ask` on the ACP backend (`q acp`, the fake imitating kiro-cli acp):
//   - streaming: from the agent sending its first agent_message_chunk to that text reaching qkit's
//     stdout (target <= 1 ms, as the text path);
//   - memory: the agent streaming 200 MB of chunks over ACP; qkit's peak RSS (target <= 40 MB);
//   - the median wall time of a one-line ask, for scale (start, initialize, session/new, prompt).
func askACPSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "ask-acp")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	acp := "QKIT_AGENT_BACKEND=acp"
	whole, err := timeRuns(30, b.env(home, acp, "FAKEQ_OUTPUT=the answer\\n"), home, b.qkit, "ask", "--no-context", "hello")
	if err != nil {
		return nil, err
	}
	latency, err := acpLatency(b, home, 30)
	if err != nil {
		return nil, err
	}
	c := exec.Command(b.qkit, "ask", "--no-context", "hello")
	c.Env, c.Dir = b.env(home, acp, "FAKEQ_BYTES=200000000"), home
	c.Stdout = io.Discard
	var errb strings.Builder
	c.Stderr = &errb
	start := time.Now()
	rss, err := peakRSS(c)
	if err != nil {
		return nil, fmt.Errorf("200 MB over ACP: %v: %s", err, errb.String())
	}
	took := time.Since(start)
	return []figure{
		info("ask-acp: qkit ask on ACP, one line, median", ms(whole), "ms"),
		atMost("ask-acp: streaming latency agent chunk -> qkit stdout (median)", float64(latency.Microseconds())/1000, "ms", 1),
		atMost("ask-acp: peak RSS, agent streaming 200 MB over ACP (qkit and agent, max)", float64(rss)/(1<<20), "MiB", 40),
		info("ask-acp: 200 MB over ACP, throughput", 200/took.Seconds(), "MB/s"),
	}, nil
}

// acpLatency runs ask with the agent sending a chunk, then pausing: the fake writes the time it had
// sent the first chunk to a file, and the time the text reached qkit's stdout is taken here.
func acpLatency(b *bench, home string, n int) (time.Duration, error) {
	stamp := filepath.Join(home, "first-stamp")
	var lat []time.Duration
	for i := 0; i < n; i++ {
		_ = os.Remove(stamp)
		c := exec.Command(b.qkit, "ask", "--no-context", "hello")
		c.Env = b.env(home, "QKIT_AGENT_BACKEND=acp", "FAKEQ_LINES=2", "FAKEQ_INTERVAL=30ms", "FAKEQ_FIRST_STAMP="+stamp)
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
