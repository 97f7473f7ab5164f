package acpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/fakeq"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/proctest"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// The test binary doubles as the fake q (ACPTEST_AS_Q) and as a standalone `acp serve`
// (ACPTEST_SERVE_DB) for the kill -9 test.
func TestMain(m *testing.M) {
	if os.Getenv("ACPTEST_AS_Q") == "1" && actingAsQ() {
		os.Exit(fakeq.Main())
	}
	if os.Getenv("ACPTEST_MCP_SERVER") == "1" {
		os.Exit(mcpServerForTest())
	}
	if db := os.Getenv("ACPTEST_SERVE_DB"); db != "" {
		os.Setenv("ACPTEST_SERVE_DB", "")
		os.Setenv("ACPTEST_AS_Q", "1")
		os.Exit(serveForTest(db))
	}
	os.Setenv("ACPTEST_AS_Q", "1") // every agent run below re-executes this binary as q
	fakeqtest.ParallelWaits()
	os.Exit(m.Run())
}

// actingAsQ tells a run as q (`chat ...`, `whoami`, or fakeq's sleeping grandchild) from the test
// binary's own runs (-test.* flags: go test, fuzz workers), which inherit the same environment.
func actingAsQ() bool {
	if os.Getenv("FAKEQ_SLEEPER") != "" {
		return true
	}
	return len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.")
}

func serveForTest(db string) int {
	store, err := sessions.Open(context.Background(), db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	if err := Serve(context.Background(), testOptions(store), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fakeExec stands in for the command tree behind the internal-command registry: it runs nothing
// and prints the argv it was given, and the folder it was asked to run in.
type fakeExec struct{}

func (fakeExec) Check(argv []string) error {
	if len(argv) > 1 && argv[len(argv)-1] == "--bad" {
		return errors.New("unknown flag: --bad")
	}
	return nil
}

func (fakeExec) Run(_ context.Context, argv []string, source, dir string) commands.Output {
	out := "ran (" + source + "): " + strings.Join(argv, " ") + "\n"
	if dir != "" {
		out += "in " + dir + "\n"
	}
	return commands.Output{Stdout: out, Total: int64(len(out))}
}

func testRegistry() *commands.Registry {
	return commands.New([]commands.Entry{
		{Path: []string{"context", "show"}, Short: "Show the context files in use", Usage: "context show", Access: commands.Read},
		{Path: []string{"context", "add"}, Short: "Add context files", Usage: "context add <path>...", Access: commands.Change},
	}, fakeExec{}, commands.Options{})
}

func testOptions(store *sessions.Store) Options {
	return Options{
		Store:     store,
		Commands:  testRegistry(),
		Limits:    agent.Limits{Command: os.Args[0], Timeout: time.Minute, MaxResponseSize: 2 << 20, StripANSI: true},
		Models:    []string{"claude-3.7-sonnet", "claude-sonnet-4"},
		MaxTokens: 150000,
		Version:   "test",
	}
}

// testClient is the editor: it records every session/update and answers permission requests
// with answer (default: allow once).
type testClient struct {
	mu      sync.Mutex
	updates []acp.SessionNotification
	changed chan struct{} // receives (without blocking) on every update
	asked   chan acp.RequestPermissionRequest
	answer  func(ctx context.Context, r acp.RequestPermissionRequest) acp.RequestPermissionResponse
	// buffers are the editor's open files (path → unsaved text) that fs/read_text_file serves.
	buffers map[string]string
	reads   []acp.ReadTextFileRequest
	// writes are the fs/write_text_file requests the editor got (each answered with errNoFS).
	writes []acp.WriteTextFileRequest
	// terminal: the editor runs terminal/* (a stand-in that answers every command alike).
	terminal  bool
	terminals []acp.CreateTerminalRequest
	// ext are the extension methods the editor got (method and params).
	ext []string
}

func newTestClient() *testClient {
	return &testClient{changed: make(chan struct{}, 1), asked: make(chan acp.RequestPermissionRequest, 16)}
}

func (c *testClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

func (c *testClient) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.asked <- r
	c.mu.Lock()
	answer := c.answer
	c.mu.Unlock()
	if answer == nil {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(optAllowOnce)}, nil
	}
	return answer(ctx, r), nil
}

func (c *testClient) setAnswer(f func(ctx context.Context, r acp.RequestPermissionRequest) acp.RequestPermissionResponse) {
	c.mu.Lock()
	c.answer = f
	c.mu.Unlock()
}

func selected(id string) func(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return func(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(id))}
	}
}

var errNoFS = errors.New("the test client has no file system or terminal")

func (c *testClient) ReadTextFile(_ context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if text, ok := c.buffers[r.Path]; ok {
		c.reads = append(c.reads, r)
		return acp.ReadTextFileResponse{Content: text}, nil
	}
	return acp.ReadTextFileResponse{}, errNoFS
}
func (c *testClient) WriteTextFile(_ context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, r)
	return acp.WriteTextFileResponse{}, errNoFS
}
func (c *testClient) CreateTerminal(_ context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.terminal {
		return acp.CreateTerminalResponse{}, errNoFS
	}
	c.terminals = append(c.terminals, r)
	return acp.CreateTerminalResponse{TerminalId: "term-1"}, nil
}
func (c *testClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNoFS
}
func (c *testClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	if c.terminal {
		return acp.TerminalOutputResponse{Output: "from the editor's terminal"}, nil
	}
	return acp.TerminalOutputResponse{}, errNoFS
}
func (c *testClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	if c.terminal {
		return acp.ReleaseTerminalResponse{}, nil
	}
	return acp.ReleaseTerminalResponse{}, errNoFS
}
func (c *testClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	if c.terminal {
		return acp.WaitForTerminalExitResponse{ExitCode: acp.Ptr(0)}, nil
	}
	return acp.WaitForTerminalExitResponse{}, errNoFS
}

// chunks returns the session's message chunks as "user: text" / "agent: text", merged per run.
func (c *testClient) transcript(id acp.SessionId) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.updates {
		if n.SessionId != id {
			continue
		}
		var role, text string
		switch u := n.Update; {
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
			role, text = "user", u.UserMessageChunk.Content.Text.Text
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			role, text = "agent", u.AgentMessageChunk.Content.Text.Text
		default:
			continue
		}
		if len(out) > 0 && strings.HasPrefix(out[len(out)-1], role+": ") {
			out[len(out)-1] += text
		} else {
			out = append(out, role+": "+text)
		}
	}
	return out
}

// agentText is everything the agent said in the session.
func (c *testClient) agentText(id acp.SessionId) string {
	var b strings.Builder
	for _, line := range c.transcript(id) {
		if s, ok := strings.CutPrefix(line, "agent: "); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func (c *testClient) count(id acp.SessionId, match func(acp.SessionUpdate) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.updates {
		if u.SessionId == id && match(u.Update) {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds, re-checking on every update; it fails the test after a minute.
func (c *testClient) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-c.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// harness is one `acp serve` on pipes, driven by the SDK's client side.
type harness struct {
	t      *testing.T
	db     string
	store  *sessions.Store
	tc     *testClient
	conn   *acp.ClientSideConnection
	toSrv  *io.PipeWriter
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, db string) *harness {
	t.Helper()
	return startWith(t, db, nil)
}

// startWith is start with a change to the options.
func startWith(t *testing.T, db string, change func(*Options)) *harness {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "qkit.db")
	}
	store, err := sessions.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, db: db, store: store, tc: newTestClient(), toSrv: c2sW, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		opts := testOptions(store)
		if change != nil {
			change(&opts)
		}
		if err := Serve(ctx, opts, c2sR, s2cW); err != nil {
			t.Errorf("Serve: %v", err)
		}
		s2cW.Close()
	}()
	h.conn = acp.NewClientSideConnection(h.tc, c2sW, s2cR)
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(h.stop)
	return h
}

// stop disconnects the client and waits for the server to finish (every turn cancelled).
// rawServe runs Serve on pipes, with a store of its own, for the tests that talk raw JSON-RPC (the
// SDK's client cannot send what they send): the server's stdin, a scanner of its stdout, and a
// channel closed once Serve returned. The test's end closes stdin and waits for it.
func rawServe(t *testing.T) (io.WriteCloser, *bufio.Scanner, <-chan struct{}) {
	t.Helper()
	store, err := sessions.Open(context.Background(), filepath.Join(t.TempDir(), "qkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(context.Background(), testOptions(store), c2sR, s2cW)
		s2cW.Close()
	}()
	t.Cleanup(func() { c2sW.Close(); <-done; store.Close() })
	return c2sW, bufio.NewScanner(s2cR), done
}

func (h *harness) stop() {
	select {
	case <-h.done:
		return
	default:
	}
	h.toSrv.Close()
	<-h.done
	h.cancel()
	h.store.Close()
}

func (h *harness) initialize() acp.InitializeResponse {
	h.t.Helper()
	resp, err := h.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return resp
}

func (h *harness) newSession(cwd string) acp.SessionId {
	h.t.Helper()
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp.SessionId
}

// cwdOf is the folder session id was created in.
func (h *harness) cwdOf(id acp.SessionId) string {
	h.t.Helper()
	rec, err := h.store.Get(context.Background(), string(id))
	if err != nil {
		h.t.Fatal(err)
	}
	return rec.Cwd
}

func (h *harness) prompt(id acp.SessionId, blocks ...acp.ContentBlock) (acp.StopReason, error) {
	resp, err := h.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: id, Prompt: blocks})
	return resp.StopReason, err
}

func (h *harness) mustPrompt(id acp.SessionId, text string, want acp.StopReason) {
	h.t.Helper()
	got, err := h.prompt(id, acp.TextBlock(text))
	if err != nil {
		h.t.Fatalf("prompt %q: %v", text, err)
	}
	if got != want {
		h.t.Fatalf("prompt %q: stopReason %q, want %q", text, got, want)
	}
}

func errCode(err error) int {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

func wantCode(t *testing.T, what string, err error, code int, msg string) {
	t.Helper()
	if errCode(err) != code {
		t.Fatalf("%s: error %v, want code %d", what, err, code)
	}
	var re *acp.RequestError
	errors.As(err, &re)
	if !strings.Contains(re.Message, msg) {
		t.Fatalf("%s: message %q does not say %q", what, re.Message, msg)
	}
}

// recorded is recordRuns' file, for a fake agent's FAKEQ_RECORD, and the reader of its runs.
func recorded(t *testing.T) (string, func() [][]string) {
	f := filepath.Join(t.TempDir(), "argv")
	return f, func() [][]string {
		data, _ := os.ReadFile(f)
		var runs [][]string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var argv []string
			if err := json.Unmarshal([]byte(line), &argv); err != nil {
				t.Fatal(err)
			}
			if argv[0] == "chat" { // not whoami
				runs = append(runs, argv)
			}
		}
		return runs
	}
}

func TestInitializeAndAuth(t *testing.T) {
	h := start(t, "")
	resp := h.initialize()
	if resp.ProtocolVersion != 1 || !resp.AgentCapabilities.LoadSession || !resp.AgentCapabilities.PromptCapabilities.EmbeddedContext ||
		resp.AgentCapabilities.PromptCapabilities.Image || resp.AgentCapabilities.PromptCapabilities.Audio {
		t.Fatalf("capabilities: %+v", resp)
	}
	sc := resp.AgentCapabilities.SessionCapabilities
	if sc.List == nil || sc.Resume == nil || sc.Close == nil {
		t.Fatalf("session capabilities: %+v", sc)
	}
	if len(resp.AuthMethods) != 0 {
		t.Fatalf("logged in, yet authMethods %+v", resp.AuthMethods)
	}

	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	resp = h.initialize()
	if len(resp.AuthMethods) != 1 || resp.AuthMethods[0].Agent == nil || resp.AuthMethods[0].Agent.Id != "cli" ||
		resp.AuthMethods[0].Agent.Name != "CLI Login" || *resp.AuthMethods[0].Agent.Description != "Run '"+filepath.Base(os.Args[0])+" login' to authenticate" {
		t.Fatalf("logged out: authMethods %+v", resp.AuthMethods)
	}
	_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	wantCode(t, "session/new before auth", err, -32000, "login")
	_, err = h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{})
	wantCode(t, "session/list before auth", err, -32000, "Authentication required")
	// Every session method, not only the first ones an editor calls.
	const someID = "0b7f3c52-1111-4000-8000-000000000000"
	cwd := t.TempDir()
	_, err = h.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: someID, Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/load before auth", err, -32000, "Authentication required")
	_, err = h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: someID, Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/resume before auth", err, -32000, "Authentication required")
	_, err = h.prompt(someID, acp.TextBlock("hi"))
	wantCode(t, "session/prompt before auth", err, -32000, "Authentication required")
	_, err = h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: someID})
	wantCode(t, "session/close before auth", err, -32000, "Authentication required")
	_, err = h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: someID, ConfigId: "model", Value: "default"}})
	wantCode(t, "session/set_config_option before auth", err, -32000, "Authentication required")
	_, err = h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "cli"})
	wantCode(t, "authenticate while logged out", err, -32000, "login")
	_, err = h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "oauth"})
	wantCode(t, "authenticate with an unknown method", err, -32602, `unknown authentication method "oauth"`)

	t.Setenv("FAKEQ_LOGGED_OUT", "")
	if _, err := h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "cli"}); err != nil {
		t.Fatalf("authenticate after login: %v", err)
	}
	h.newSession(t.TempDir())
}

// TestLoginCheck: the check is agent.CheckLogin's: KIRO_API_KEY counts as logged in
// without asking the agent, and a missing agent binary is reported as missing, never as "log in".
func TestLoginCheck(t *testing.T) {
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	t.Setenv("KIRO_API_KEY", "k")
	h := start(t, "")
	if resp := h.initialize(); len(resp.AuthMethods) != 0 {
		t.Fatalf("KIRO_API_KEY set, yet authMethods %+v", resp.AuthMethods)
	}
	t.Setenv("KIRO_API_KEY", "")
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	h = startWith(t, "", func(o *Options) { o.Limits.Command = missing })
	_, err := h.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	wantCode(t, "initialize without the agent binary", err, -32603, "not found")
	if strings.Contains(err.Error(), "login") {
		t.Fatalf("a missing binary reported as a login problem: %v", err)
	}
}

func TestPromptStreamsChunksInOrder(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_LINES=50")
	q.Set("FAKEQ_INTERVAL=1ms")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.mustPrompt(id, "count to fifty", acp.StopReasonEndTurn)
	var want strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := h.tc.agentText(id); got != want.String() {
		t.Fatalf("streamed reply %q, want %q", got, want.String())
	}
	if n := h.tc.count(id, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil }); n < 2 {
		t.Fatalf("the reply came in %d chunk(s); it should stream", n)
	}
	argv := runs()[0]
	if argv[0] != "chat" || argv[1] != "--no-interactive" || argv[len(argv)-1] != "count to fifty" {
		t.Fatalf("argv %q", argv)
	}
	for _, a := range argv {
		if a == "--resume" || a == "-r" {
			t.Fatalf("argv %q uses --resume: each ACP session is its own conversation", argv)
		}
	}
}

func TestEarlierTurnsArePassed(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_OUTPUT=Paris.")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "What is the capital of France?", acp.StopReasonEndTurn)
	h.mustPrompt(id, "And its population?", acp.StopReasonEndTurn)
	last := runs()[1]
	prompt := last[len(last)-1]
	for _, want := range []string{"User: What is the capital of France?", "Assistant: Paris.", "And its population?"} {
		if !strings.Contains(prompt, want) {
			t.Fatalf("second prompt %q lacks %q", prompt, want)
		}
	}
	// A second session is a different conversation.
	other := h.newSession(t.TempDir())
	h.mustPrompt(other, "hello", acp.StopReasonEndTurn)
	if p := runs()[2]; p[len(p)-1] != "hello" {
		t.Fatalf("new session's prompt %q carries another session's history", p[len(p)-1])
	}
}

func TestResourceBlocks(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_ECHO_PROMPT=1")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	_, err := h.prompt(id,
		acp.TextBlock("Review these:"),
		acp.ResourceLinkBlock("main.go", "file:///src/main.go"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{
			Uri: "file:///src/notes.md", MimeType: acp.Ptr("text/markdown"), Text: "# Notes"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := "Review these:\n<resource uri=\"file:///src/main.go\"/>\n<resource uri=\"file:///src/notes.md\" mime-type=\"text/markdown\"># Notes</resource>\n"
	if got := h.tc.agentText(id); got != want {
		t.Fatalf("q received %q, want %q", got, want)
	}
	// session/load replays the prompt as the blocks the client sent, not as the text q was given;
	// the next prompt still gives q the converted text of this one in its history.
	cwd := h.cwdOf(id)
	h.stop()
	h2 := startWith(t, h.db, useAgent(q))
	h2.initialize()
	if _, err := h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var user []acp.ContentBlock
	h2.tc.mu.Lock()
	for _, n := range h2.tc.updates {
		if n.Update.UserMessageChunk != nil {
			user = append(user, n.Update.UserMessageChunk.Content)
		}
	}
	h2.tc.mu.Unlock()
	if len(user) != 3 || user[0].Text == nil || user[0].Text.Text != "Review these:" ||
		user[1].ResourceLink == nil || user[1].ResourceLink.Uri != "file:///src/main.go" || user[1].ResourceLink.Name != "main.go" ||
		user[2].Resource == nil || user[2].Resource.Resource.TextResourceContents == nil ||
		user[2].Resource.Resource.TextResourceContents.Text != "# Notes" || *user[2].Resource.Resource.TextResourceContents.MimeType != "text/markdown" {
		t.Fatalf("replayed prompt: %+v", user)
	}
	h2.mustPrompt(id, "and now?", acp.StopReasonEndTurn)
	if !strings.Contains(h2.tc.agentText(id), "User: Review these:\n<resource uri=\"file:///src/main.go\"/>") {
		t.Fatalf("history given to q: %q", h2.tc.agentText(id))
	}
	h = h2

	_, err = h.prompt(id, acp.ImageBlock("aGk=", "image/png"))
	wantCode(t, "image prompt", err, -32602, "images are not supported")
	_, err = h.prompt(id, acp.AudioBlock("aGk=", "audio/wav"))
	wantCode(t, "audio prompt", err, -32602, "audio is not supported")
	_, err = h.prompt(id, acp.TextBlock("  "))
	wantCode(t, "empty prompt", err, -32602, "prompt is empty")
}

func TestAgentFailureIsRefusal(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_EXIT=3", "FAKEQ_STDERR=error: the model is overloaded")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "hi", acp.StopReasonRefusal)
	if got := h.tc.agentText(id); !strings.Contains(got, "the model is overloaded") {
		t.Fatalf("the failure was not reported: %q", got)
	}
}

func TestTimeoutEndsTheTurn(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_OUTPUT=partial answer\n", "FAKEQ_SLEEP=30s")
	// The timeout is counted on a clock the test moves once q's partial reply has reached the
	// editor, however slow the machine: the turn waits for no real timeout.
	clock := fakeqtest.NewClock()
	h := startWith(t, "", func(o *Options) { o.Limits.Command, o.Limits.Timeout, o.Limits.Clock = q.Command, 5*time.Second, clock })
	h.initialize()
	id := h.newSession(t.TempDir())
	type answer struct {
		resp acp.StopReason
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := h.prompt(id, acp.TextBlock("slow"))
		done <- answer{resp, err}
	}()
	h.tc.waitFor(t, "the partial reply", func() bool { return h.tc.agentText(id) == "partial answer\n" })
	if n := clock.Advance(5 * time.Second); n != 1 {
		t.Fatalf("moving the clock by the timeout ended %d runs, not one", n)
	}
	a := <-done
	if a.err != nil || a.resp != acp.StopReasonEndTurn {
		t.Fatalf("timed-out prompt: %v %v", a.resp, a.err)
	}
	got := h.tc.agentText(id)
	if !strings.HasPrefix(got, "partial answer\n") || !strings.Contains(got, "TIMED OUT") || !strings.Contains(got, "timeout of 5 seconds") {
		t.Fatalf("reply %q lacks the partial output or the timeout notice", got)
	}
}

// toolUpdates are session id's tool_call and tool_call_update statuses for call, in order.
func (c *testClient) toolStatuses(id acp.SessionId, call acp.ToolCallId) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.updates {
		switch u := n.Update; {
		case n.SessionId != id:
		case u.ToolCall != nil && u.ToolCall.ToolCallId == call:
			out = append(out, string(u.ToolCall.Status))
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == call && u.ToolCallUpdate.Status != nil:
			out = append(out, string(*u.ToolCallUpdate.Status))
		}
	}
	return out
}

// TestPermissionFlow (q 1.19.7): q stops at an untrusted tool with its approval error; the tool
// is reported as a tool call titled with its name, the editor is asked about that call, and q runs
// again with the tool trusted. The reply has neither q's "> " nor its banners.
func TestPermissionFlow(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_FLAVOUR=q")
	q.Set("FAKEQ_TOOLS=fs_write")
	q.Set("FAKEQ_OUTPUT=file written")
	h := startWith(t, "", useAgent(q))
	h.initialize()

	t.Run("allow_once", func(t *testing.T) {
		id := h.newSession(t.TempDir())
		h.tc.setAnswer(selected(optAllowOnce))
		h.mustPrompt(id, "write it", acp.StopReasonEndTurn)
		r := <-h.tc.asked
		if r.SessionId != id || r.ToolCall.Title == nil || *r.ToolCall.Title != "fs_write" {
			t.Fatalf("permission request does not name the tool: %+v", r.ToolCall)
		}
		var kinds []string
		for _, o := range r.Options {
			kinds = append(kinds, string(o.Kind))
		}
		if strings.Join(kinds, ",") != "allow_once,allow_always,reject_once" {
			t.Fatalf("options %v", kinds)
		}
		calls := h.tc.toolCalls(id)
		if len(calls) != 1 || calls[0].Title != "fs_write" || calls[0].Kind != acp.ToolKindEdit || calls[0].ToolCallId != r.ToolCall.ToolCallId {
			t.Fatalf("tool calls %+v (asked about %s)", calls, r.ToolCall.ToolCallId)
		}
		if got := strings.Join(h.tc.toolStatuses(id, calls[0].ToolCallId), ","); got != "pending,in_progress,completed" {
			t.Fatalf("tool call statuses %s", got)
		}
		got := h.tc.agentText(id)
		if !strings.Contains(got, "file written") || strings.Contains(got, "Using tool") || strings.Contains(got, "> ") || strings.Contains(got, "●") {
			t.Fatalf("reply %q", got)
		}
		// The run repeated with the tool allowed starts with the text the editor has already
		// (what q said before the tool): it is sent once.
		if n := strings.Count(got, "Let me use the tools for that."); n != 1 {
			t.Fatalf("the text from before the tool was sent %d times: %q", n, got)
		}
		all := runs()
		if last := all[len(all)-1]; !contains(last, "--trust-tools=fs_write") {
			t.Fatalf("re-run without the tool trusted: %q", last)
		}
		// Once means once: the next prompt asks again.
		h.mustPrompt(id, "write it again", acp.StopReasonEndTurn)
		<-h.tc.asked
	})

	t.Run("allow_always", func(t *testing.T) {
		id := h.newSession(t.TempDir())
		h.tc.setAnswer(selected(optAllowAlways))
		h.mustPrompt(id, "write it", acp.StopReasonEndTurn)
		<-h.tc.asked
		before := len(runs())
		h.mustPrompt(id, "write it again", acp.StopReasonEndTurn)
		select {
		case r := <-h.tc.asked:
			t.Fatalf("asked again after allow_always: %+v", r)
		default:
		}
		all := runs()
		if len(all) != before+1 || !contains(all[len(all)-1], "--trust-tools=fs_write") {
			t.Fatalf("second prompt's runs %q", all[before:])
		}
		rec, err := h.store.Get(context.Background(), string(id))
		if err != nil || !contains(rec.TrustedTools, "fs_write") {
			t.Fatalf("trusted tools not stored: %+v %v", rec.TrustedTools, err)
		}

		// q's false approval error: a stream failure after the trusted tool ran is reported as an
		// approval error. It is an ordinary failure, never a permission request.
		q.Set("FAKEQ_FAIL=stream")
		h.mustPrompt(id, "write it once more", acp.StopReasonRefusal)
		select {
		case r := <-h.tc.asked:
			t.Fatalf("q's false approval error asked for permission: %+v", r)
		default:
		}
		if got := h.tc.agentText(id); !strings.Contains(got, "having trouble responding") {
			t.Fatalf("reply %q", got)
		}
	})

	t.Run("reject_once", func(t *testing.T) {
		q.Set("FAKEQ_FAIL=")
		id := h.newSession(t.TempDir())
		h.tc.setAnswer(selected(optRejectOnce))
		h.mustPrompt(id, "write it", acp.StopReasonEndTurn)
		<-h.tc.asked
		got := h.tc.agentText(id)
		if !strings.Contains(got, "Permission to use fs_write was refused") || strings.Contains(got, "file written") {
			t.Fatalf("reply after reject: %q", got)
		}
		calls := h.tc.toolCalls(id)
		if len(calls) != 1 || strings.Join(h.tc.toolStatuses(id, calls[0].ToolCallId), ",") != "pending,failed" {
			t.Fatalf("rejected tool call: %+v %v", calls, h.tc.toolStatuses(id, calls[0].ToolCallId))
		}
	})
}

// TestKiroDenial (kiro-cli 2.x): kiro denies untrusted tools and carries on (exit 0). The editor
// is asked about each, and the prompt runs again with them trusted under kiro's own names (an MCP
// tool as @server/tool); what kiro said without the tools is not streamed as the answer.
func TestKiroDenial(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_FLAVOUR=kiro")
	q.Set("FAKEQ_TOOLS=shell,@git/status")
	q.Set("FAKEQ_OUTPUT=all done")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "check the repo", acp.StopReasonEndTurn)
	var asked []string
	for range 2 {
		r := <-h.tc.asked
		asked = append(asked, *r.ToolCall.Title)
	}
	if strings.Join(asked, ",") != "shell,status (git)" {
		t.Fatalf("asked about %q", asked)
	}
	all := runs()
	if len(all) != 2 || !contains(all[1], "--trust-tools=shell,@git/status") {
		t.Fatalf("runs %q", all)
	}
	got := h.tc.agentText(id)
	if strings.Count(got, "all done") != 1 || strings.Count(got, "Let me use the tools for that.") != 1 ||
		strings.Contains(got, "rejected") || strings.Contains(got, "denied list") {
		t.Fatalf("reply %q", got)
	}
	calls := h.tc.toolCalls(id)
	if len(calls) != 2 {
		t.Fatalf("tool calls %+v", calls)
	}
	for _, c := range calls {
		if st := strings.Join(h.tc.toolStatuses(id, c.ToolCallId), ","); st != "pending,in_progress,completed" {
			t.Fatalf("%s: statuses %s", c.Title, st)
		}
	}
}

// TestHostileToolName: a tool whose name as the agent prints it carries an escape sequence is
// shown without it, but trusting the shown name ("shell") would trust another tool and never the
// one the agent needs. It is not asked about (nothing the editor allows could let it run, and
// --trust-tools cannot carry its name): the turn ends once, saying so, with the agent run once.
func TestHostileToolName(t *testing.T) {
	t.Parallel()
	for _, flavour := range []string{"kiro", "q"} {
		t.Run(flavour, func(t *testing.T) {
			t.Parallel()
			q := newFakeAgent(t, "")
			runs := recordRuns(t, q)
			q.Set("FAKEQ_FLAVOUR=" + flavour)
			q.Set("FAKEQ_TOOLS=sh\x1b[2Jell")
			q.Set("FAKEQ_OUTPUT=all done")
			h := startWith(t, "", useAgent(q))
			h.initialize()
			id := h.newSession(t.TempDir())
			h.mustPrompt(id, "clear the screen", acp.StopReasonEndTurn)
			select {
			case r := <-h.tc.asked:
				t.Fatalf("asked about %q", *r.ToolCall.Title)
			default:
			}
			if all := runs(); len(all) != 1 || slices.ContainsFunc(all[0], func(a string) bool { return strings.HasPrefix(a, "--trust") }) {
				t.Fatalf("runs %q", all)
			}
			got := h.tc.agentText(id)
			if !strings.Contains(got, "The agent's own name for the tool shell holds characters that --trust-tools cannot carry") ||
				strings.Contains(got, "\x1b") {
				t.Fatalf("reply %q", got)
			}
			calls := h.tc.toolCalls(id)
			if len(calls) != 1 || calls[0].Title != "shell" {
				t.Fatalf("tool calls %+v", calls)
			}
			if st := h.tc.toolStatuses(id, calls[0].ToolCallId); st[len(st)-1] != "failed" {
				t.Fatalf("statuses %q", st)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// alive says whether pid is a running (not zombie) process; a check that cannot tell fails the
// caller's expectation either way, so it is reported as not alive.
func alive(pid int) bool {
	running, err := proctest.Running(pid)
	return err == nil && running
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	if err := proctest.WaitGone(pid, 30*time.Second); err != nil {
		t.Fatalf("outlived the cancelled turn: %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	q.Set("FAKEQ_LINES=100000")
	q.Set("FAKEQ_INTERVAL=10ms")
	q.Set("FAKEQ_GRANDCHILD=" + pidFile)
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	type result struct {
		stop acp.StopReason
		err  error
	}
	res := make(chan result, 1)
	go func() { s, err := h.prompt(id, acp.TextBlock("go on forever")); res <- result{s, err} }()
	h.tc.waitFor(t, "the first chunk", func() bool { return strings.Contains(h.tc.agentText(id), "line 2\n") })
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.stop != acp.StopReasonCancelled {
		t.Fatalf("cancelled prompt answered %q, %v; want stopReason cancelled and no error", r.stop, r.err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(data))
	waitGone(t, pid)

	// The session still works.
	q.Set("FAKEQ_LINES=1")
	q.Set("FAKEQ_INTERVAL=")
	q.Set("FAKEQ_GRANDCHILD=")
	h.mustPrompt(id, "again", acp.StopReasonEndTurn)
}

func TestCancelWhileAskingPermission(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_APPROVAL_TOOL=execute_bash")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	clientSaw := make(chan string, 1)
	h.tc.setAnswer(func(ctx context.Context, _ acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		<-ctx.Done() // the agent withdraws the request with $/cancel_request
		clientSaw <- "withdrawn"
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	})
	res := make(chan acp.StopReason, 1)
	go func() { s, err := h.prompt(id, acp.TextBlock("run it")); _ = err; res <- s }()
	<-h.tc.asked
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if s := <-res; s != acp.StopReasonCancelled {
		t.Fatalf("stopReason %q, want cancelled", s)
	}
	if got := <-clientSaw; got != "withdrawn" {
		t.Fatal(got)
	}
}

func TestSecondPromptCancelsTheFirst(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	first := make(chan acp.StopReason, 1)
	go func() { s, _ := h.prompt(id, acp.TextBlock("first")); first <- s }()
	h.tc.waitFor(t, "the first reply", func() bool { return strings.Contains(h.tc.agentText(id), "line 1\n") })
	q.Set("FAKEQ_LINES=1")
	q.Set("FAKEQ_INTERVAL=")
	h.mustPrompt(id, "second", acp.StopReasonEndTurn)
	if s := <-first; s != acp.StopReasonCancelled {
		t.Fatalf("first prompt: %q, want cancelled", s)
	}
}

func TestSessionsRunInParallel(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	slow, fast := h.newSession(t.TempDir()), h.newSession(t.TempDir())
	res := make(chan acp.StopReason, 1)
	go func() { s, _ := h.prompt(slow, acp.TextBlock("slow")); res <- s }()
	h.tc.waitFor(t, "the slow session to stream", func() bool { return strings.Contains(h.tc.agentText(slow), "line 1\n") })
	// Set for the second run only: the running slow q has its environment already.
	q.Set("FAKEQ_LINES=3")
	q.Set("FAKEQ_INTERVAL=")
	h.mustPrompt(fast, "fast", acp.StopReasonEndTurn) // finishes while the slow one still runs
	select {
	case s := <-res:
		t.Fatalf("the slow prompt ended (%q) before the fast one in another session", s)
	default:
	}
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: slow}); err != nil {
		t.Fatal(err)
	}
	if s := <-res; s != acp.StopReasonCancelled {
		t.Fatalf("slow: %q", s)
	}
}

func TestLoadAfterRestart(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	db := filepath.Join(t.TempDir(), "qkit.db")
	cwd := t.TempDir()
	q.Set("FAKEQ_ECHO_PROMPT=1")
	h := startWith(t, db, useAgent(q))
	h.initialize()
	id := h.newSession(cwd)
	h.mustPrompt(id, "one", acp.StopReasonEndTurn)
	one := h.tc.agentText(id)
	h.mustPrompt(id, "two", acp.StopReasonEndTurn)
	two := strings.TrimPrefix(h.tc.agentText(id), one)
	h.stop()

	h2 := startWith(t, db, useAgent(q))
	h2.initialize()
	if _, err := h2.prompt(id, acp.TextBlock("three")); errCode(err) != -32602 {
		t.Fatalf("prompt on a session not loaded in this connection: %v", err)
	}
	if _, err := h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The SDK delivers notifications before the response they preceded: the replay is complete.
	got := h2.tc.transcript(id)
	want := []string{"user: one", "agent: " + one, "user: two", "agent: " + two}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("replay %q, want %q", got, want)
	}
	h2.tc.waitFor(t, "available_commands_update after session/load", func() bool {
		return h2.tc.count(id, func(u acp.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil }) == 1
	})
	h2.mustPrompt(id, "three", acp.StopReasonEndTurn)
	if !strings.Contains(h2.tc.agentText(id), "User: two") {
		t.Fatalf("the loaded session lost its history: %q", h2.tc.agentText(id))
	}

	_, err := h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: "7b0c4b8e-0000-4000-8000-000000000000", Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "load of an unknown id", err, -32002, "not found")
	// The session belongs to its folder: loading or resuming it from another is refused, saying
	// which folder, and nothing is replayed.
	before := len(h2.tc.transcript(id))
	other := t.TempDir()
	_, err = h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: other, McpServers: []acp.McpServer{}})
	wantCode(t, "load from another folder", err, -32602, fmt.Sprintf("belongs to the folder %q, not %q", cwd, other))
	_, err = h2.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: id, Cwd: other, McpServers: []acp.McpServer{}})
	wantCode(t, "resume from another folder", err, -32602, "belongs to the folder")
	_, err = h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: "relative", McpServers: []acp.McpServer{}})
	wantCode(t, "load with a relative cwd", err, -32602, "not an absolute path")
	_, err = h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: filepath.Join(other, "gone"), McpServers: []acp.McpServer{}})
	wantCode(t, "load with a missing cwd", err, -32602, "does not exist")
	if after := len(h2.tc.transcript(id)); after != before {
		t.Fatalf("a refused load replayed: %d -> %d", before, after)
	}
	// The same folder written differently (a trailing slash) is the same folder.
	if _, err := h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd + "/", McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("load with %q: %v", cwd+"/", err)
	}
	// So is the folder reached through a link, as ask --session and the MCP tool take it.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(cwd, link); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: link, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("load through a link to its folder: %v", err)
	}
}

func TestListResumeClose(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_OUTPUT=ok")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	cwdA, cwdB := t.TempDir(), t.TempDir()
	a := h.newSession(cwdA)
	b := h.newSession(cwdB)
	h.mustPrompt(a, "Fix the flaky test\nin pkg/x", acp.StopReasonEndTurn)
	h.mustPrompt(b, "Write docs", acp.StopReasonEndTurn)

	all, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{})
	if err != nil || len(all.Sessions) != 2 {
		t.Fatalf("list: %+v %v", all, err)
	}
	if all.Sessions[0].SessionId != b || *all.Sessions[1].Title != "Fix the flaky test" || all.Sessions[1].UpdatedAt == nil {
		t.Fatalf("list order or title: %+v", all.Sessions)
	}
	inA, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &cwdA})
	if err != nil || len(inA.Sessions) != 1 || inA.Sessions[0].SessionId != a || inA.Sessions[0].Cwd != cwdA {
		t.Fatalf("list --cwd: %+v %v", inA, err)
	}
	bogus := "not-a-cursor"
	_, err = h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cursor: &bogus})
	wantCode(t, "list with a cursor it never gave", err, -32602, `cursor "not-a-cursor"`)
	rel := "relative/dir"
	_, err = h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &rel})
	wantCode(t, "list with a relative cwd", err, -32602, "not an absolute path")

	// close cancels and frees; the session must be resumed to be used again.
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: b}); err != nil {
		t.Fatal(err)
	}
	// Closed and resumed at once: the new actor replaces the old one even before its entry is gone.
	if _, err := h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: b, Cwd: cwdB, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("resume right after close: %v", err)
	}
	h.mustPrompt(b, "still here", acp.StopReasonEndTurn)
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: a}); err != nil {
		t.Fatal(err)
	}
	_, err = h.prompt(a, acp.TextBlock("again"))
	wantCode(t, "prompt on a closed session", err, -32602, "not open")
	_, err = h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: "nope"})
	wantCode(t, "close of an unknown id", err, -32002, "not found")

	chunks := func() int {
		return h.tc.count(a, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil || u.UserMessageChunk != nil })
	}
	n := chunks()
	if _, err := h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: a, Cwd: cwdA, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if chunks() != n {
		t.Fatal("session/resume replayed the transcript")
	}
	h.mustPrompt(a, "again", acp.StopReasonEndTurn)
	_, err = h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: "nope", Cwd: cwdA, McpServers: []acp.McpServer{}})
	wantCode(t, "resume of an unknown id", err, -32002, "not found")
}

// TestListPages: session/list gives 100 sessions a page and a nextCursor that leads to the rest.
func TestListPages(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	h.initialize()
	cwd := t.TempDir()
	seen := map[acp.SessionId]bool{}
	for i := 0; i < 101; i++ {
		seen[h.newSession(cwd)] = false
	}
	first, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(first.Sessions) != 100 || first.NextCursor == nil {
		t.Fatalf("first page: %d sessions, cursor %v (%v)", len(first.Sessions), first.NextCursor, err)
	}
	rest, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &cwd, Cursor: first.NextCursor})
	if err != nil || len(rest.Sessions) != 1 || rest.NextCursor != nil {
		t.Fatalf("second page: %+v (%v)", rest, err)
	}
	for _, s := range append(first.Sessions, rest.Sessions...) {
		if seen[s.SessionId] {
			t.Fatalf("%s listed twice", s.SessionId)
		}
		seen[s.SessionId] = true
	}
	for id, ok := range seen {
		if !ok {
			t.Fatalf("%s never listed", id)
		}
	}
}

func TestCloseCancelsTheRunningTurn(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	id := h.newSession(t.TempDir())
	res := make(chan acp.StopReason, 1)
	go func() { s, _ := h.prompt(id, acp.TextBlock("long")); res <- s }()
	h.tc.waitFor(t, "streaming", func() bool { return strings.Contains(h.tc.agentText(id), "line 1\n") })
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if s := <-res; s != acp.StopReasonCancelled {
		t.Fatalf("prompt of a closed session: %q", s)
	}
}

func TestSetModeAndModel(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_OUTPUT=ok")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ConfigOptions) != 1 || resp.ConfigOptions[0].Select == nil || resp.ConfigOptions[0].Select.Id != "model" ||
		*resp.ConfigOptions[0].Select.Category != acp.SessionConfigOptionCategoryModel || resp.ConfigOptions[0].Select.CurrentValue != "default" {
		t.Fatalf("config options: %+v", resp.ConfigOptions)
	}
	id := resp.SessionId
	_, err = h.conn.SetSessionMode(context.Background(), acp.SetSessionModeRequest{SessionId: id, ModeId: "code"})
	wantCode(t, "set_mode", err, -32601, "not supported")

	set, err := h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "claude-sonnet-4"}})
	if err != nil || set.ConfigOptions[0].Select.CurrentValue != "claude-sonnet-4" {
		t.Fatalf("set model: %+v %v", set, err)
	}
	h.mustPrompt(id, "hi", acp.StopReasonEndTurn)
	argv := runs()[0]
	if strings.Join(argv[:4], " ") != "chat --no-interactive --model claude-sonnet-4" {
		t.Fatalf("argv %q", argv)
	}
	_, err = h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "gpt-9"}})
	wantCode(t, "unknown model", err, -32602, `unknown model "gpt-9"`)
	_, err = h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "mode", Value: "x"}})
	wantCode(t, "unknown option", err, -32602, `unknown config option "mode"`)
}

func TestInvalidParams(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	h.initialize()
	for _, c := range []struct{ cwd, msg string }{
		{"", ""}, // refused by the SDK's own validation
		{"relative/path", "not an absolute path"},
		{filepath.Join(t.TempDir(), "missing"), "does not exist"},
	} {
		_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: c.cwd, McpServers: []acp.McpServer{}})
		wantCode(t, "session/new cwd "+c.cwd, err, -32602, c.msg)
	}
	_, err := h.prompt("0b7f3c52-1111-4000-8000-000000000000", acp.TextBlock("hi"))
	wantCode(t, "prompt on an unknown session", err, -32002, "not found")
	// Cancel of an unknown session is a notification: ignored, and the server keeps serving.
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: "nope"}); err != nil {
		t.Fatal(err)
	}
	h.newSession(t.TempDir())
}

// TestInternalErrors: a failure that is not the client's (here the database going away) answers
// internal error with what failed, and the server goes on serving.
func TestInternalErrors(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.store.Close()
	_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/new without a database", err, -32603, "database is closed")
	_, err = h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{})
	wantCode(t, "session/list without a database", err, -32603, "database is closed")
	_, err = h.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/load without a database", err, -32603, "database is closed")
	// A prompt reports the failure as the agent's message and ends with refusal.
	h.mustPrompt(id, "hi", acp.StopReasonRefusal)
	if !strings.Contains(h.tc.agentText(id), "database is closed") {
		t.Fatalf("agent said %q", h.tc.agentText(id))
	}
}

// TestMalformedParams talks raw JSON-RPC: the SDK's client cannot send ill-typed params.
func TestMalformedParams(t *testing.T) {
	t.Parallel()
	c2sW, lines, _ := rawServe(t)
	call := func(msg string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(c2sW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s", msg)
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	for i, msg := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":5,"mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"x","prompt":"not a list"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"video"}]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"session/load","params":[1,2]}`,
	} {
		m := call(msg)
		e, ok := m["error"].(map[string]any)
		if !ok || e["code"].(float64) != -32602 {
			t.Fatalf("case %d: %s answered %v, want invalid params", i, msg, m)
		}
	}
	if m := call(`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}`); m["result"] == nil {
		t.Fatalf("the server stopped serving after malformed params: %v", m)
	}
	// The slash commands are announced after the session/new response, never before it: editors
	// drop updates for a session they do not know yet.
	cwd, _ := json.Marshal(t.TempDir())
	m := call(`{"jsonrpc":"2.0","id":10,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	result, _ := m["result"].(map[string]any)
	if m["id"] != float64(10) || result["sessionId"] == nil {
		t.Fatalf("first line after session/new is %v, want its response", m)
	}
	if !lines.Scan() {
		t.Fatal("no available_commands_update")
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind     string `json:"sessionUpdate"`
				Commands []struct {
					Name string `json:"name"`
				} `json:"availableCommands"`
			} `json:"update"`
		} `json:"params"`
	}
	if err := json.Unmarshal(lines.Bytes(), &n); err != nil || n.Method != "session/update" || n.Params.SessionID != result["sessionId"] ||
		n.Params.Update.Kind != "available_commands_update" || len(n.Params.Update.Commands) == 0 {
		t.Fatalf("after the response: %s (%v)", lines.Bytes(), err)
	}
}

// TestMalformedLines sends lines the SDK alone would drop without an answer, or end the session
// on: each gets a JSON-RPC error that is valid JSON, with the request's id where
// it can be read, and the session carries on. A line just under the limit is read.
func TestMalformedLines(t *testing.T) {
	t.Parallel()
	c2sW, lines, done := rawServe(t)
	lines.Buffer(nil, 1<<20)
	call := func(msg string) map[string]any {
		t.Helper()
		go func() { _, _ = io.WriteString(c2sW, msg+"\n") }()
		if !lines.Scan() {
			t.Fatalf("no answer to %.100s", msg)
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("answer %q is not JSON: %v", lines.Bytes(), err)
		}
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	huge := func(id string, size int) string {
		pre := `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"resource","resource":{"uri":"file:///big.txt","text":"`
		post := `"}}]}}`
		return pre + strings.Repeat("x", size-len(pre)-len(post)) + post
	}
	for i, c := range []struct {
		line string
		code float64
		id   any
	}{
		{`garbage`, -32700, nil},
		{strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000), -32700, nil},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"session/list\",\"params\":{}}", 0, "\uFFFD\uFFFD"},
		{huge("7", MaxLine+1), -32700, float64(7)},
		{huge("8", MaxLine), -32002, float64(8)}, // read, and answered: no such session
		// Nesting too deep after the id: the request is answered under its id.
		{`{"jsonrpc":"2.0","id":77,"method":"session/list","params":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + `}`, -32700, float64(77)},
		// A request with a null id is refused, not run as a notification.
		{`{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}`, -32600, nil},
		// A session method without a session id: invalid params, not "session \"\" not found".
		{`{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"x"}]}}`, -32602, float64(10)},
		{`{"jsonrpc":"2.0","id":11,"method":"session/set_config_option","params":{"configId":"model","value":"default"}}`, -32602, float64(11)},
		{`{"jsonrpc":"2.0","id":12,"method":"session/close","params":{}}`, -32602, float64(12)},
		{`{"jsonrpc":"2.0","id":13,"method":"session/load","params":{"cwd":"/tmp","mcpServers":[]}}`, -32602, float64(13)},
	} {
		// The lines at the 10 MiB limit are a check of sizes, not of concurrency: under the race
		// detector they took 20 s and 650 MB (most of the race pass's time and memory for this
		// package), so the race pass leaves them to the unit tests.
		if raceBuild && len(c.line) >= MaxLine {
			continue
		}
		m := call(c.line)
		if code(m) != c.code || m["id"] != c.id {
			t.Fatalf("case %d: answer %.300v, want code %v and id %v", i, m, c.code, c.id)
		}
	}
	if m := call(`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}`); m["result"] == nil {
		t.Fatalf("the server stopped serving after malformed lines: %v", m)
	}
	c2sW.Close()
	<-done
}

// TestRequestWithoutIDIsNotRun: session/new and session/prompt sent without an id (notifications
// to the SDK, which runs them one at a time with session/cancel and before the editor's answers)
// are dropped with a log line naming them. The prompt did not hold up the queue: a later
// session/cancel reaches another session's turn, and no turn ran in the first session.
func TestRequestWithoutIDIsNotRun(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	var log syncBuf
	h := startWith(t, "", func(o *Options) {
		useAgent(q)(o)
		o.Logger = newLogger(&log)
	})
	h.initialize()
	a := h.newSession(t.TempDir())
	b := h.newSession(t.TempDir())
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"` + t.TempDir() + `","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + string(a) + `","prompt":[{"type":"text","text":"run long"}]}}`,
	} {
		if _, err := io.WriteString(h.toSrv, line+"\n"); err != nil { // one write: never interleaved with the SDK's
			t.Fatal(err)
		}
	}
	res := make(chan acp.StopReason, 1)
	go func() { s, _ := h.prompt(b, acp.TextBlock("go on")); res <- s }()
	h.tc.waitFor(t, "the turn in the other session", func() bool { return strings.Contains(h.tc.agentText(b), "line 2\n") })
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: b}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-res:
		if s != acp.StopReasonCancelled {
			t.Fatalf("stopReason %q, want cancelled", s)
		}
	case <-time.After(time.Minute): // a bound on a hang, not a measure
		t.Fatal("session/cancel did not reach the turn: it waits behind the prompt sent without an id")
	}
	if h.tc.count(a, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil || u.UserMessageChunk != nil }) != 0 {
		t.Fatalf("the prompt sent without an id ran: %q", h.tc.transcript(a))
	}
	list, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("sessions %+v, %v: want the two created with an id", list.Sessions, err)
	}
	for _, m := range []string{"session/new", "session/prompt"} {
		if !strings.Contains(log.String(), "dropped a request sent without an id") || !strings.Contains(log.String(), "method="+m) {
			t.Fatalf("log %q: want a line naming %s", log.String(), m)
		}
	}
}

// TestKillMidTurnKeepsCompletedTurns kills a real `acp serve` process with SIGKILL in the middle
// of a turn: every completed turn is in the database afterwards.
func TestKillMidTurnKeepsCompletedTurns(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "qkit.db")
	srv := exec.Command(os.Args[0], "-test.run=^$")
	srv.Env = append(os.Environ(), "ACPTEST_AS_Q=", "ACPTEST_SERVE_DB="+db, "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	stdin, _ := srv.StdinPipe()
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	tc := newTestClient()
	conn := acp.NewClientSideConnection(tc, stdin, stdout)
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	// Turn one completes (cancelled after a few lines: a completed turn all the same).
	go func() {
		_, _ = conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("one")}})
	}()
	tc.waitFor(t, "turn one", func() bool { return strings.Contains(tc.agentText(s.SessionId), "line 3\n") })
	_ = conn.Cancel(ctx, acp.CancelNotification{SessionId: s.SessionId})
	store, err := sessions.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitTurns := func(n int) {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			msgs, _ := store.Messages(ctx, string(s.SessionId))
			if len(msgs) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("turn not stored: %d messages", len(msgs))
			}
		}
	}
	waitTurns(2)
	go func() {
		_, _ = conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("two")}})
	}()
	tc.waitFor(t, "turn two", func() bool { return strings.Count(tc.agentText(s.SessionId), "line 3\n") == 2 })
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.Wait()
	msgs, err := store.Messages(ctx, string(s.SessionId))
	if err != nil || len(msgs) != 2 || msgs[0].Text != "one" || !strings.HasPrefix(msgs[1].Text, "line 1\n") {
		t.Fatalf("after kill -9: %+v %v", msgs, err)
	}
}

func TestSlashCommands(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_ECHO_PROMPT=1")
	h := startWith(t, "", useAgent(q))
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.tc.waitFor(t, "available_commands_update", func() bool {
		return h.tc.count(id, func(u acp.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil }) == 1
	})
	h.tc.mu.Lock()
	var names []string
	for _, n := range h.tc.updates {
		if n.SessionId == id && n.Update.AvailableCommandsUpdate != nil {
			for _, c := range n.Update.AvailableCommandsUpdate.AvailableCommands {
				names = append(names, c.Name)
			}
		}
	}
	h.tc.mu.Unlock()
	if strings.Join(names, ",") != "context add,context show,help" {
		t.Fatalf("available commands %q", names)
	}

	said := func() string { return h.tc.agentText(id) }
	h.mustPrompt(id, "/context show", acp.StopReasonEndTurn)
	// The command runs in the session's folder, not the server's.
	if got := said(); got != "ran (acp): context show\nin "+cwd+"\n" {
		t.Fatalf("/context show answered %q", got)
	}
	select {
	case r := <-h.tc.asked:
		t.Fatalf("a read-only command asked for permission: %+v", r)
	default:
	}

	before := said()
	h.tc.setAnswer(selected(optAllowOnce))
	h.mustPrompt(id, "/context add notes.md", acp.StopReasonEndTurn)
	r := <-h.tc.asked
	if r.ToolCall.Title == nil || !strings.Contains(*r.ToolCall.Title, "context add notes.md") {
		t.Fatalf("confirmation does not name the command: %+v", r.ToolCall)
	}
	if got := strings.TrimPrefix(said(), before); got != "ran (acp): context add notes.md\nin "+cwd+"\n" {
		t.Fatalf("confirmed /context add answered %q", got)
	}

	before = said()
	h.tc.setAnswer(selected(optRejectOnce))
	h.mustPrompt(id, "/context add other.md", acp.StopReasonEndTurn)
	<-h.tc.asked
	if got := strings.TrimPrefix(said(), before); !strings.Contains(got, "declined") || strings.Contains(got, "ran (acp)") {
		t.Fatalf("declined /context add answered %q", got)
	}

	before = said()
	h.mustPrompt(id, "/context frobnicate", acp.StopReasonEndTurn)
	if got := strings.TrimPrefix(said(), before); !strings.Contains(got, "frobnicate") {
		t.Fatalf("bad subcommand answered %q", got)
	}
	if n := len(runs()); n != 0 {
		t.Fatalf("slash commands ran q %d times", n)
	}

	// A slash that is not a registry command is an ordinary prompt for q.
	h.mustPrompt(id, "/usr/lib is slow, why?", acp.StopReasonEndTurn)
	if n := len(runs()); n != 1 {
		t.Fatalf("q ran %d times for an ordinary prompt", n)
	}
}

// TestSlashCommandCancelIsInterrupted: a change whose permission request is cancelled (the client
// answers "cancelled", or session/cancel arrives while it asks) stops the turn as cancelled and is
// audited as interrupted with exit code 130, as the CLI's Ctrl-C and MCP's cancelled form are, and
// a "don't run it" is audited as declined.
func TestSlashCommandCancelIsInterrupted(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "state", "audit.log")
	h := startWith(t, "", func(o *Options) {
		o.Commands = commands.New([]commands.Entry{
			{Path: []string{"context", "add"}, Short: "Add context files", Usage: "context add <path>...", Access: commands.Change},
		}, fakeExec{}, commands.Options{AuditPath: audit})
	})
	h.initialize()
	id := h.newSession(t.TempDir())

	h.tc.setAnswer(func(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	})
	h.mustPrompt(id, "/context add a.md", acp.StopReasonCancelled)
	<-h.tc.asked

	h.tc.setAnswer(func(ctx context.Context, _ acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		<-ctx.Done()
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	})
	res := make(chan acp.StopReason, 1)
	go func() { s, _ := h.prompt(id, acp.TextBlock("/context add b.md")); res <- s }()
	<-h.tc.asked
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if s := <-res; s != acp.StopReasonCancelled {
		t.Fatalf("stopReason %q, want cancelled", s)
	}

	h.tc.setAnswer(selected(optRejectOnce))
	h.mustPrompt(id, "/context add c.md", acp.StopReasonEndTurn)
	<-h.tc.asked

	recs, err := commands.ReadAudit(audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("audit %+v", recs)
	}
	for i, want := range []struct {
		line                 string
		interrupted, decline bool
		code                 int
	}{{"qkit context add a.md", true, false, 130}, {"qkit context add b.md", true, false, 130}, {"qkit context add c.md", false, true, 3}} {
		r := recs[i]
		if r.Source != "acp" || r.CommandLine != want.line || r.Interrupted != want.interrupted || r.Declined != want.decline || r.ExitCode != want.code || r.Confirmed {
			t.Errorf("audit line %d = %+v, want %+v", i, r, want)
		}
	}
}

func TestContextBlockAndHistoryBudget(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "", "FAKEQ_ECHO_PROMPT=1")
	var gotCwd string
	var gotBudget int
	h := startWith(t, "", func(o *Options) {
		useAgent(q)(o)
		o.MaxTokens = 100 // 400 bytes: half for earlier turns
		o.Context = func(cwd string, maxTokens int, prompt string) (string, []string, error) {
			gotCwd, gotBudget = cwd, maxTokens
			return "--- CONTEXT FILES BEGIN ---\n[/notes.md]\nnotes\n--- CONTEXT FILES END ---\n\n" + prompt, []string{"a warning"}, nil
		}
	})
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.mustPrompt(id, strings.Repeat("a", 150), acp.StopReasonEndTurn)
	// The files get the whole of context.max_tokens, as ask gives them; the history has its own
	// budget (sessionrec.HistoryBytes).
	if gotCwd != cwd || gotBudget != 100 {
		t.Fatalf("context built for cwd %q with %d tokens", gotCwd, gotBudget)
	}
	// The context files' warning goes to the editor first, as ask prints it on stderr; it is qkit's
	// notice, not the agent's reply, so the agent's echo of its prompt never holds it.
	const notice = "qkit: warning: a warning\n"
	first := h.tc.agentText(id)
	if !strings.HasPrefix(first, notice+"--- CONTEXT FILES BEGIN ---\n") || !strings.HasSuffix(first, strings.Repeat("a", 150)+"\n") {
		t.Fatalf("q received %q", first)
	}
	// The first turn (150 + ~250 bytes) no longer fits in 200 bytes of history: it is dropped.
	h.mustPrompt(id, "second", acp.StopReasonEndTurn)
	if second := strings.TrimPrefix(h.tc.agentText(id), first); strings.Contains(second, "CONVERSATION SO FAR") {
		t.Fatalf("history over budget was sent: %q", second)
	}
	before := h.tc.agentText(id)
	h.mustPrompt(id, "third", acp.StopReasonEndTurn)
	// The second turn fits: the history comes first, then the files with the prompt, as on every
	// door (askrun.Sessions puts the history before what ask and the MCP tool built).
	third, told := strings.CutPrefix(strings.TrimPrefix(h.tc.agentText(id), before), notice)
	if !told || strings.Contains(third, "qkit: warning") {
		t.Fatalf("the editor was not told, or the agent was given qkit's notice (history): %q", third)
	}
	if !strings.HasPrefix(third, "--- CONVERSATION SO FAR ---\n") ||
		!strings.Contains(third, "--- END OF CONVERSATION SO FAR ---\n\n--- CONTEXT FILES BEGIN ---\n") ||
		!strings.HasSuffix(third, "--- CONTEXT FILES END ---\n\nthird\n") {
		t.Fatalf("q received %q", third)
	}
}

func TestAgentProfileAndMCPServersStored(t *testing.T) {
	t.Parallel()
	q := newFakeAgent(t, "")
	runs := recordRuns(t, q)
	q.Set("FAKEQ_OUTPUT=ok")
	h := startWith(t, "", func(o *Options) { useAgent(q)(o); o.Agent = "my-profile" })
	h.initialize()
	mcp := []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "files", Command: "/usr/bin/mcp-files", Args: []string{"--root", "/"}, Env: []acp.EnvVariable{}}}}
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: mcp})
	if err != nil {
		t.Fatal(err)
	}
	// The session id is a UUID (the ACP session is the conversation's UUID).
	if u, err := uuid.Parse(string(resp.SessionId)); err != nil || u.Version() != 4 {
		t.Fatalf("session id %q is not a UUID (%v)", resp.SessionId, err)
	}
	h.mustPrompt(resp.SessionId, "hi", acp.StopReasonEndTurn)
	if argv := runs()[0]; strings.Join(argv[:4], " ") != "chat --no-interactive --agent my-profile" {
		t.Fatalf("argv %q", argv)
	}
	rec, err := h.store.Get(context.Background(), string(resp.SessionId))
	if err != nil || !strings.Contains(string(rec.MCPServers), `"command":"/usr/bin/mcp-files"`) || rec.Title != "hi" {
		t.Fatalf("stored session %+v (%v)", rec, err)
	}
}

// TestRouteRefusesWhenTheInboxIsFull: the server never blocks on a session; a session whose
// 32-message inbox is full makes the request fail with a clear error instead.
func TestRouteRefusesWhenTheInboxIsFull(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	srv := newServer()
	defer func() { cancel(); srv.shutdown() }()
	if n := cap((&adapter{ctx: ctx}).startSession(sessions.SessionRecord{ID: "x"}).inbox); n != 32 {
		t.Fatalf("a session's inbox holds %d messages, want 32", n)
	}
	h := &sessionHandle{id: "s", inbox: make(chan sessionMsg, inboxSize), done: make(chan struct{})}
	srv.open("s", func() *sessionHandle { return h }) // no actor reads the inbox
	for i := 0; i < inboxSize; i++ {
		if _, err := srv.route("s", msgCancel{}); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if _, err := srv.route("s", msgCancel{}); !errors.Is(err, errBusy) {
		t.Fatalf("33rd message: %v, want errBusy", err)
	}
	if _, err := srv.route("other", msgCancel{}); !errors.Is(err, errNotOpen) {
		t.Fatalf("unknown session: %v", err)
	}
	close(h.done)
	// The ended session leaves the table, and shutdown waits for nothing left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		srv.mu.Lock()
		n := len(srv.sessions)
		srv.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an ended session stayed in the table")
		}
		time.Sleep(time.Millisecond)
	}
}

// serveProcess starts this test binary as a standalone `acp serve` on db and connects a client.
func serveProcess(t *testing.T, db string, env ...string) (*acp.ClientSideConnection, *testClient) {
	t.Helper()
	srv := exec.Command(os.Args[0], "-test.run=^$")
	srv.Env = append(append(os.Environ(), "ACPTEST_AS_Q=", "ACPTEST_SERVE_DB="+db), env...)
	stdin, _ := srv.StdinPipe()
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = srv.Wait() })
	tc := newTestClient()
	conn := acp.NewClientSideConnection(tc, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	return conn, tc
}

// TestTwoServeProcessesShareTheDatabase runs two `acp serve` processes (two editor windows) on one
// database, prompting at the same time: every turn of both is stored, and each sees the other's.
func TestTwoServeProcessesShareTheDatabase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "qkit.db")
	cwd := t.TempDir()
	ctx := context.Background()
	type window struct {
		conn *acp.ClientSideConnection
		id   acp.SessionId
	}
	var windows []window
	for i := 0; i < 2; i++ {
		conn, _ := serveProcess(t, db, "FAKEQ_OUTPUT=reply")
		s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		windows = append(windows, window{conn, s.SessionId})
	}
	const turns = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*turns)
	for _, w := range windows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < turns; i++ {
				_, err := w.conn.Prompt(ctx, acp.PromptRequest{SessionId: w.id, Prompt: []acp.ContentBlock{acp.TextBlock(fmt.Sprint("prompt ", i))}})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range windows {
		other := windows[1-i]
		list, err := w.conn.ListSessions(ctx, acp.ListSessionsRequest{Cwd: &cwd})
		if err != nil || len(list.Sessions) != 2 {
			t.Fatalf("window %d lists %+v (%v)", i, list, err)
		}
		if _, err := w.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: other.id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
			t.Fatalf("window %d loading the other window's session: %v", i, err)
		}
	}
	store, err := sessions.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, w := range windows {
		msgs, err := store.Messages(ctx, string(w.id))
		if err != nil || len(msgs) != 2*turns {
			t.Fatalf("session %s: %d messages (%v)", w.id, len(msgs), err)
		}
	}
}

// TestImportedSessionTrustsNothing: a session imported from a file whose trusted_tools say
// fs_write runs its next prompt (text path) with no tool trusted: the file grants nothing here.
func TestImportedSessionTrustsNothing(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	db := filepath.Join(t.TempDir(), "qkit.db")
	file := fmt.Sprintf(`{"kind":"qkit-session","version":1,"session":{"cwd":%q,"backend":"text","mode":"yolo-agent",
		"trusted_tools":["fs_write","execute_bash"],"turns":1},
		"transcript":[{"role":"user","text":"earlier"},{"role":"agent","text":"reply"}]}`, cwd)
	e, err := sessions.ParseExport([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	store, err := sessions.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	if _, err := store.Import(context.Background(), e, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	store.Close()

	q := newFakeAgent(t, "", "FAKEQ_OUTPUT=ok")
	runs := recordRuns(t, q)
	h := startWith(t, db, useAgent(q))
	h.initialize()
	if _, err := h.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	h.mustPrompt(acp.SessionId(id), "go on", acp.StopReasonEndTurn)
	all := runs()
	if len(all) != 1 {
		t.Fatalf("runs %q", all)
	}
	for _, arg := range all[0] {
		if strings.HasPrefix(arg, "--trust") {
			t.Fatalf("the imported session's prompt ran with %s: %q", arg, all[0])
		}
	}
}
