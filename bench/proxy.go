//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// proxySuite measures `qkit acp serve` on the proxy path (agent.backend acp) in front of the fake's
// ACP agent (`q acp`, imitating kiro-cli acp), with the Go SDK's client:
//   - overhead per chunk: the first agent_message_chunk's latency from just before the agent wrote
//     it (FAKEQ_BEFORE_STAMP), through qkit, minus the same latency with the client on the agent
//     directly; medians of 30 prompts each (target <= 0.5 ms);
//   - 50 proxied sessions streaming 1 MB each at once: peak RSS of qkit (target < 100 MB);
//   - cancel through the proxy: session/cancel to the cancelled response, median of 20 (target
//     <= 100 ms).
func proxySuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "proxy")
	cwd := filepath.Join(home, "project")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return nil, err
	}
	ctx := context.Background()
	stamp := filepath.Join(home, "first-line")
	latency := func(s *acpServer) (time.Duration, error) {
		id, err := s.newSession(ctx, cwd)
		if err != nil {
			return 0, err
		}
		lat, err := s.chunkLatencies(ctx, id, stamp, 30)
		if err != nil {
			return 0, err
		}
		_, err = s.close()
		return median(lat), err
	}
	knobs := []string{"FAKEQ_OUTPUT=hello\\n", "FAKEQ_BEFORE_STAMP=" + stamp}
	s, err := startAgentDirect(b, home, knobs...)
	if err != nil {
		return nil, err
	}
	direct, err := latency(s)
	if err != nil {
		return nil, err
	}
	if s, err = startACP(b, home, append([]string{"QKIT_AGENT_BACKEND=acp"}, knobs...)...); err != nil {
		return nil, err
	}
	proxied, err := latency(s)
	if err != nil {
		return nil, err
	}

	// 50 sessions streaming 1 MB each, at once, through one agent process. The agent sends each
	// 84-byte line as its own chunk (600,000 notifications): the Go SDK's client hangs up once 1024
	// wait in its queue, so a client that reads the lines itself counts them.
	rss, err := proxyStream(b, home, cwd, 50, 1000000)
	if err != nil {
		return nil, err
	}

	// Cancel through the proxy.
	if s, err = startACP(b, home, "QKIT_AGENT_BACKEND=acp", "FAKEQ_LINES=1000000", "FAKEQ_INTERVAL=5ms"); err != nil {
		return nil, err
	}
	id, err := s.newSession(ctx, cwd)
	if err != nil {
		return nil, err
	}
	cancels, err := s.cancelLatencies(ctx, id, 20)
	if err != nil {
		return nil, err
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}

	return []figure{
		info("proxy: first chunk, agent to editor directly (median of 30)", ms(direct), "ms"),
		info("proxy: first chunk, agent to qkit to editor (median of 30)", ms(proxied), "ms"),
		atMost("proxy: overhead per chunk, proxied minus direct", ms(proxied-direct), "ms", 0.5),
		atMost("proxy: qkit peak RSS, 50 proxied sessions streaming 1 MB each at once", float64(rss)/(1<<20), "MiB", 100),
		atMost("proxy: session/cancel through the proxy to cancelled (median of 20)", ms(median(cancels)), "ms", 100),
	}, nil
}

// startAgentDirect starts the fake's ACP agent (`q acp`) with the Go SDK's client on it, no qkit
// in between: the baseline of the overhead figure.
func startAgentDirect(b *bench, home string, extra ...string) (*acpServer, error) {
	cmd := exec.Command(filepath.Join(b.fakeq, "q"), "acp")
	cmd.Env, cmd.Dir = b.env(home, extra...), home
	return connectSDK(startPiped(cmd))
}

// proxyStream runs sessions prompts at once on a proxied `acp serve`, each streaming size bytes,
// reading the NDJSON lines itself; it checks every byte arrived and returns qkit's peak RSS.
func proxyStream(b *bench, home, cwd string, sessions, size int) (int64, error) {
	cmd, in, out, errb, err := b.startServe(home, []string{"QKIT_ACP_ENABLED=true", "QKIT_AGENT_BACKEND=acp", "FAKEQ_BYTES=" + strconv.Itoa(size)}, "acp")
	if err != nil {
		return 0, err
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(id int, method string, params any) error {
		p, _ := json.Marshal(params)
		_, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, p)
		return err
	}
	type msg struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Params struct {
			Update struct {
				Kind    string `json:"sessionUpdate"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		} `json:"params"`
	}
	received := 0
	// until reads lines until the response to id, counting the reply bytes on the way.
	responses := map[int]json.RawMessage{}
	until := func(id int) (json.RawMessage, error) {
		for {
			if r, ok := responses[id]; ok {
				return r, nil
			}
			if !lines.Scan() {
				return nil, fmt.Errorf("qkit ended before answering request %d: %s", id, errb.String())
			}
			var m msg
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				return nil, fmt.Errorf("qkit wrote %q: %v", lines.Bytes(), err)
			}
			switch {
			case m.Method == "session/update" && m.Params.Update.Kind == "agent_message_chunk":
				received += len(m.Params.Update.Content.Text)
			case m.ID != nil && m.Method == "":
				if m.Error != nil {
					return nil, fmt.Errorf("request %d: %s", *m.ID, m.Error)
				}
				responses[*m.ID] = m.Result
			}
		}
	}
	if err := send(1, "initialize", map[string]any{"protocolVersion": 1}); err != nil {
		return 0, err
	}
	if _, err := until(1); err != nil {
		return 0, err
	}
	ids := make([]string, sessions)
	for i := range ids {
		if err := send(100+i, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}); err != nil {
			return 0, err
		}
		r, err := until(100 + i)
		if err != nil {
			return 0, err
		}
		var res struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(r, &res)
		ids[i] = res.SessionID
	}
	received = 0
	for i, id := range ids {
		if err := send(1000+i, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "stream"}}}); err != nil {
			return 0, err
		}
	}
	for i := range ids {
		if _, err := until(1000 + i); err != nil {
			return 0, err
		}
	}
	if received != sessions*size {
		return 0, fmt.Errorf("%d proxied sessions: the client received %d bytes, want %d", sessions, received, sessions*size)
	}
	// qkit's own peak, read before it exits: the rusage of a waited-for process also counts its
	// waited-for children (here the agent, which keeps every reply it sent).
	hwm, err := vmHWM(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	s := &acpServer{cmd: cmd, errb: errb}
	_ = in.Close()
	if _, err := s.close(); err != nil {
		return 0, err
	}
	return hwm, nil
}

// vmHWM is the peak resident set of process pid alone (Linux's VmHWM), in bytes.
func vmHWM(pid int) (int64, error) { return procStatus(pid, "VmHWM") }
