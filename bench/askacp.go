//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	latency, err := streamLatency(b, home, 30, acp)
	if err != nil {
		return nil, err
	}
	rss, took, err := askPeakRSS(b, home, acp, "FAKEQ_BYTES=200000000")
	if err != nil {
		return nil, fmt.Errorf("200 MB over ACP: %v", err)
	}
	return []figure{
		info("ask-acp: qkit ask on ACP, one line, median", ms(whole), "ms"),
		atMost("ask-acp: streaming latency agent chunk -> qkit stdout (median)", float64(latency.Microseconds())/1000, "ms", 1),
		atMost("ask-acp: peak RSS, agent streaming 200 MB over ACP (qkit and agent, max)", float64(rss)/(1<<20), "MiB", 40),
		info("ask-acp: 200 MB over ACP, throughput", 200/took.Seconds(), "MB/s"),
	}, nil
}
