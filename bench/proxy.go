//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// proxySuite measures `qkit acp serve` on the proxy path (agent.backend acp) in front of the fake's
// ACP agent (`q acp`, imitating kiro-cli acp), with the Go SDK's client (issue 12):
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
		var lat []time.Duration
		for range 30 {
			s.c.reset()
			if _, err := s.prompt(ctx, id, "hi"); err != nil {
				return 0, err
			}
			data, err := os.ReadFile(stamp)
			if err != nil {
				return 0, err
			}
			ns, _ := strconv.ParseInt(string(data), 10, 64)
			lat = append(lat, s.c.firstChunk().Sub(time.Unix(0, ns)))
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

	// 50 sessions streaming 1 MB each, at once, through one agent process.
	if s, err = startACP(b, home, "QKIT_AGENT_BACKEND=acp", "FAKEQ_BYTES=1000000"); err != nil {
		return nil, err
	}
	ids := make([]acp.SessionId, 50)
	for i := range ids {
		if ids[i], err = s.newSession(ctx, cwd); err != nil {
			return nil, err
		}
	}
	s.c.reset()
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop, err := s.prompt(ctx, id, "stream a megabyte")
			if err == nil && stop != acp.StopReasonEndTurn {
				err = fmt.Errorf("session %s: stopReason %s", id, stop)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if got := s.c.bytes(); got != 50*1000000 {
		return nil, fmt.Errorf("50 proxied sessions: client received %d bytes, want %d", got, 50*1000000)
	}
	rss, err := s.close()
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
	var cancels []time.Duration
	for range 20 {
		s.c.reset()
		done := make(chan error, 1)
		go func() {
			stop, err := s.prompt(ctx, id, "go on")
			if err == nil && stop != acp.StopReasonCancelled {
				err = fmt.Errorf("cancelled prompt answered %s", stop)
			}
			done <- err
		}()
		if err := s.c.waitChunk(30 * time.Second); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := s.conn.Cancel(ctx, acp.CancelNotification{SessionId: id}); err != nil {
			return nil, err
		}
		if err := <-done; err != nil {
			return nil, err
		}
		cancels = append(cancels, time.Since(start))
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
	errb := &strings.Builder{}
	cmd.Stderr = errb
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &benchClient{chunk: make(chan struct{}, 1)}
	s := &acpServer{cmd: cmd, conn: acp.NewClientSideConnection(c, in, out), c: c, errb: errb}
	s.conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := s.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("initialize: %v: %s", err, errb.String())
	}
	return s, nil
}
