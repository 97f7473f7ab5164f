//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// acpSuite measures `qkit acp serve` with the Go SDK's client over stdio:
//   - chunk latency: from just before the fake q writes its first line (FAKEQ_BEFORE_STAMP: a stamp
//     taken after the write could come after the client had the chunk) to the client receiving
//     the agent_message_chunk, median of 30 prompts (target <= 2 ms);
//   - 50 sessions each streaming 1 MB at once: all complete, peak RSS of the server (target < 100 MB);
//   - session/load of a 10,000-message transcript: updates per second (target >= 50,000);
//   - cancel: from session/cancel to the "cancelled" response, median of 20 (target <= 100 ms).
func acpSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "acp")
	cwd := filepath.Join(home, "project")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return nil, err
	}
	ctx := context.Background()

	// Chunk latency.
	stamp := filepath.Join(home, "first-line")
	s, err := startACP(b, home, "FAKEQ_OUTPUT=hello\\n", "FAKEQ_BEFORE_STAMP="+stamp)
	if err != nil {
		return nil, err
	}
	id, err := s.newSession(ctx, cwd)
	if err != nil {
		return nil, err
	}
	lat, err := s.chunkLatencies(ctx, id, stamp, 30)
	if err != nil {
		return nil, err
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}

	// 50 sessions streaming 1 MB each, at once.
	s, err = startACP(b, home, "FAKEQ_BYTES=1000000")
	if err != nil {
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
		return nil, fmt.Errorf("50 sessions: client received %d bytes, want %d", got, 50*1000000)
	}
	rss, err := s.close()
	if err != nil {
		return nil, err
	}

	// Replay of a 10,000-message transcript, written straight into the database. The Go SDK's
	// client gets a 1,000-message one: it hangs up once 1024 notifications wait in its queue, and
	// it decodes them more slowly than qkit sends them (see internal/acpserver's replay).
	db := filepath.Join(home, ".qkit", "data", "qkit.db")
	replayID, err := seedTranscript(ctx, db, "5e1b1e2a-0000-4000-8000-00000000bench", cwd, 5000)
	if err != nil {
		return nil, err
	}
	smallID, err := seedTranscript(ctx, db, "5e1b1e2a-0000-4000-8000-000000000sdk", cwd, 500)
	if err != nil {
		return nil, err
	}
	s, err = startACP(b, home)
	if err != nil {
		return nil, err
	}
	s.c.reset()
	start := time.Now()
	if _, err := s.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: smallID, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		return nil, err
	}
	replaySDK := time.Since(start)
	if n := s.c.count(); n != 1000 {
		return nil, fmt.Errorf("replay: %d updates, want 1000", n)
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}
	replay, err := rawReplay(b, home, cwd, replayID)
	if err != nil {
		return nil, err
	}

	// Cancel.
	s, err = startACP(b, home, "FAKEQ_LINES=1000000", "FAKEQ_INTERVAL=5ms")
	if err != nil {
		return nil, err
	}
	id, err = s.newSession(ctx, cwd)
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
		atMost("acp: chunk latency, q's line to agent_message_chunk (median of 30)", ms(median(lat)), "ms", 2),
		atMost("acp: server peak RSS, 50 sessions streaming 1 MB each at once", float64(rss)/(1<<20), "MiB", 100),
		atLeast("acp: session/load replay of 10,000 messages", 10000/replay.Seconds(), "updates/s", 50000),
		info("acp: replay of 1,000 messages decoded by the Go SDK's client", 1000/replaySDK.Seconds(), "updates/s"),
		atMost("acp: session/cancel to the cancelled response (median of 20)", ms(median(cancels)), "ms", 100),
	}, nil
}

// rawReplay times session/load of id as qkit delivers it: a client that reads the NDJSON lines
// and counts the session/update ones until the response, with no decoding in the way.
func rawReplay(b *bench, home, cwd string, id acp.SessionId) (time.Duration, error) {
	cmd := exec.Command(b.qkit, "acp", "serve")
	cmd.Env = b.env(home, "QKIT_ACP_ENABLED=true")
	cmd.Dir = home
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	// wait reads lines until the response to request id, counting notifications.
	wait := func(reqID string) (int, error) {
		n := 0
		for lines.Scan() {
			l := lines.Bytes()
			if bytes.Contains(l, []byte(`"method":"session/update"`)) {
				n++
				continue
			}
			if bytes.Contains(l, []byte(`"id":`+reqID+`,`)) || bytes.HasSuffix(l, []byte(`"id":`+reqID+`}`)) {
				return n, nil
			}
		}
		return n, fmt.Errorf("no response to request %s", reqID)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"); err != nil {
		return 0, err
	}
	if _, err := wait("1"); err != nil {
		return 0, err
	}
	params, _ := json.Marshal(map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}})
	start := time.Now()
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":`+string(params)+"}\n"); err != nil {
		return 0, err
	}
	n, err := wait("2")
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if n != 10000 {
		return 0, fmt.Errorf("raw replay: %d updates, want 10000", n)
	}
	return d, nil
}

// seedTranscript creates session id with turns turns (2 messages each) in the database at db.
func seedTranscript(ctx context.Context, db, id, cwd string, turns int) (acp.SessionId, error) {
	store, err := sessions.Open(ctx, db)
	if err != nil {
		return "", err
	}
	defer store.Close()
	now := time.Now()
	if err := store.Create(ctx, sessions.SessionRecord{ID: id, Cwd: cwd, CreatedAt: now, UpdatedAt: now}); err != nil {
		return "", err
	}
	for i := 0; i < turns; i++ {
		q := fmt.Sprintf("question %d: why does the build take so long on this machine?", i)
		a := strings.Repeat(fmt.Sprintf("answer %d explains the build. ", i), 8)
		if err := store.AppendTurn(ctx, id, sessions.Turn{Prompt: q, Reply: a}, now); err != nil {
			return "", err
		}
	}
	return acp.SessionId(id), nil
}

// acpServer is one `qkit acp serve` process with the SDK's client on its stdio.
type acpServer struct {
	cmd  *exec.Cmd
	conn *acp.ClientSideConnection
	c    *benchClient
	errb *strings.Builder
	hwm  func() int64 // watchHWM of the server and the agents it runs
}

func startACP(b *bench, home string, extra ...string) (*acpServer, error) {
	// The text path unless extra says otherwise (the fake q speaks ACP too, and agent.backend is
	// auto by default).
	return connectSDK(b.startServe(home, append([]string{"QKIT_ACP_ENABLED=true", "QKIT_AGENT_BACKEND=chat"}, extra...), "acp"))
}

// connectSDK puts the Go SDK's client on a started ACP agent's pipes and initializes it; the
// arguments are startPiped's results.
func connectSDK(cmd *exec.Cmd, in io.WriteCloser, out io.ReadCloser, errb *strings.Builder, err error) (*acpServer, error) {
	if err != nil {
		return nil, err
	}
	c := &benchClient{chunk: make(chan struct{}, 1)}
	s := &acpServer{cmd: cmd, conn: acp.NewClientSideConnection(c, in, out), c: c, errb: errb, hwm: watchHWM(cmd.Process.Pid)}
	s.conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := s.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("initialize: %v: %s", err, errb.String())
	}
	return s, nil
}

// chunkLatencies prompts session id n times; each figure runs from the stamp the agent wrote just
// before its first chunk (FAKEQ_BEFORE_STAMP=stamp) to the client receiving that chunk.
func (s *acpServer) chunkLatencies(ctx context.Context, id acp.SessionId, stamp string, n int) ([]time.Duration, error) {
	var lat []time.Duration
	for range n {
		s.c.reset()
		if _, err := s.prompt(ctx, id, "hi"); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(stamp)
		if err != nil {
			return nil, err
		}
		ns, _ := strconv.ParseInt(string(data), 10, 64)
		lat = append(lat, s.c.firstChunk().Sub(time.Unix(0, ns)))
	}
	return lat, nil
}

// cancelLatencies starts n prompts of session id in turn (the agent streaming without end) and
// cancels each once its first chunk arrived; each figure runs from session/cancel to the
// cancelled response.
func (s *acpServer) cancelLatencies(ctx context.Context, id acp.SessionId, n int) ([]time.Duration, error) {
	var cancels []time.Duration
	for range n {
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
	return cancels, nil
}

func (s *acpServer) newSession(ctx context.Context, cwd string) (acp.SessionId, error) {
	res, err := s.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	return res.SessionId, err
}

func (s *acpServer) prompt(ctx context.Context, id acp.SessionId, text string) (acp.StopReason, error) {
	res, err := s.conn.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	return res.StopReason, err
}

// close hangs up (closing the server's stdin), waits for the server and returns its peak RSS.
func (s *acpServer) close() (int64, error) {
	if in, ok := s.cmd.Stdin.(interface{ Close() error }); ok {
		_ = in.Close()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	err := s.cmd.Wait()
	var peak int64
	if s.hwm != nil { // nil: the caller reads the peak itself (proxy.go)
		peak = s.hwm()
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 0, fmt.Errorf("qkit acp serve: %v: %s", err, s.errb.String())
		}
	}
	return peak, nil
}

// benchClient counts what arrives and notes when the first agent chunk of a prompt came in.
type benchClient struct {
	mu      sync.Mutex
	first   time.Time
	updates int
	size    int
	chunk   chan struct{}
}

func (c *benchClient) reset() {
	c.mu.Lock()
	c.first, c.updates, c.size = time.Time{}, 0, 0
	c.mu.Unlock()
	select {
	case <-c.chunk:
	default:
	}
}

func (c *benchClient) firstChunk() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

func (c *benchClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates
}

func (c *benchClient) bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func (c *benchClient) waitChunk(d time.Duration) error {
	select {
	case <-c.chunk:
		return nil
	case <-time.After(d):
		return fmt.Errorf("no agent_message_chunk within %s", d)
	}
}

func (c *benchClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	u := n.Update
	if u.AgentMessageChunk == nil && u.UserMessageChunk == nil {
		return nil
	}
	c.updates++
	if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
		c.size += len(u.AgentMessageChunk.Content.Text.Text)
		if c.first.IsZero() {
			c.first = now
			select {
			case c.chunk <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

var errBenchNoFS = errors.New("the bench client has no file system or terminal")

func (c *benchClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}
func (c *benchClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errBenchNoFS
}
func (c *benchClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errBenchNoFS
}
func (c *benchClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errBenchNoFS
}
func (c *benchClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errBenchNoFS
}
func (c *benchClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errBenchNoFS
}
func (c *benchClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errBenchNoFS
}
func (c *benchClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errBenchNoFS
}
