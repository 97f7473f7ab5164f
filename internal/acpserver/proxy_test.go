package acpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// mcpServerForTest is a stdio MCP server with one tool, "echo", for the bridge test.
func mcpServerForTest() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo from the stdio server: " + a.Text}}}, nil, nil
	})
	if f := os.Getenv("ACPTEST_MCP_PID"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// startProxy is an `acp serve` on the proxy path (agent.backend acp), with the fake as `q acp`
// (imitating kiro-cli acp) keeping its sessions under a HOME of the test's.
func startProxy(t *testing.T, db string) *harness {
	t.Helper()
	if os.Getenv("HOME") == "" || !strings.HasPrefix(os.Getenv("HOME"), os.TempDir()) {
		t.Setenv("HOME", t.TempDir())
	}
	return startWith(t, db, func(o *Options) { o.Backend = acpclient.BackendACP })
}

// agentDies ends the agent initialize started with FAKEQ_ACP_BAD=die (it dies in a turn of a
// session of its own), so that the next session starts another, under the environment the test
// sets then (the next one lives). The server notices the death before the turn answers.
func (h *harness) agentDies() {
	h.t.Helper()
	id := h.newSession(h.t.TempDir())
	h.t.Setenv("FAKEQ_ACP_BAD", "")
	_, _ = h.prompt(id, acp.TextBlock("die"))
}

func (h *harness) initializeWith(caps acp.ClientCapabilities) {
	h.t.Helper()
	if _, err := h.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
}

func (h *harness) newSessionWith(cwd string, servers []acp.McpServer) acp.NewSessionResponse {
	h.t.Helper()
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp
}

// toolCalls are the tool_call updates of session id.
func (c *testClient) toolCalls(id acp.SessionId) []acp.SessionUpdateToolCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []acp.SessionUpdateToolCall
	for _, n := range c.updates {
		if n.SessionId == id && n.Update.ToolCall != nil {
			out = append(out, *n.Update.ToolCall)
		}
	}
	return out
}

// toolOutput is the text content of the last tool_call_update of call id that had some.
func (c *testClient) toolOutput(id acp.SessionId, call acp.ToolCallId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ""
	for _, n := range c.updates {
		u := n.Update.ToolCallUpdate
		if n.SessionId != id || u == nil || u.ToolCallId != call {
			continue
		}
		for _, ct := range u.Content {
			if ct.Content != nil && ct.Content.Content.Text != nil {
				out = ct.Content.Content.Text.Text
			}
		}
	}
	return out
}

func lines(file string) []string {
	data, _ := os.ReadFile(file)
	return strings.Fields(strings.TrimSpace(string(data)))
}

// TestProxyToolCallWithDiffAndPermission: the agent's tool call with its diff reaches the editor
// under qkit's session id, the permission round trip goes to the editor, and the tool, once
// approved, runs exactly once (no re-run as on the text path).
func TestProxyToolCallWithDiffAndPermission(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	ran := filepath.Join(t.TempDir(), "ran")
	q.Set("FAKEQ_ACP_TOOLS=write:out.txt")
	q.Set("FAKEQ_ACP_RAN=" + ran)
	q.Set("FAKEQ_OUTPUT=file written")
	h := startProxyAgent(t, "", q)
	h.initialize()
	cwd := t.TempDir()
	resp := h.newSessionWith(cwd, []acp.McpServer{})
	id := resp.SessionId
	h.mustPrompt(id, "write it", acp.StopReasonEndTurn)
	r := <-h.tc.asked
	if r.SessionId != id || r.ToolCall.Title == nil || *r.ToolCall.Title != "Writing out.txt" {
		t.Fatalf("permission request %+v", r)
	}
	calls := h.tc.toolCalls(id)
	if len(calls) != 1 || calls[0].Kind != acp.ToolKindEdit || len(calls[0].Content) != 1 || calls[0].Content[0].Diff == nil ||
		calls[0].Content[0].Diff.NewText != "written by fakeq\n" || calls[0].Content[0].Diff.Path != filepath.Join(cwd, "out.txt") {
		t.Fatalf("tool calls %+v", calls)
	}
	if got := lines(ran); len(got) != 1 || got[0] != "write:out.txt" {
		t.Fatalf("the tool ran %q, want once", got)
	}
	if data, _ := os.ReadFile(filepath.Join(cwd, "out.txt")); string(data) != "written by fakeq\n" {
		t.Fatalf("out.txt %q", data)
	}
	if got := h.tc.agentText(id); !strings.Contains(got, "file written") {
		t.Fatalf("reply %q", got)
	}
	// kiro's usage, as the protocol's usage_update.
	h.tc.waitFor(t, "a usage_update", func() bool {
		return h.tc.count(id, func(u acp.SessionUpdate) bool {
			return u.UsageUpdate != nil && u.UsageUpdate.Used == 13 && u.UsageUpdate.Size == 100
		}) > 0
	})
	// The model option is the agent's list.
	var models []string
	for _, o := range resp.ConfigOptions {
		if o.Select != nil && o.Select.Options.Ungrouped != nil {
			for _, v := range *o.Select.Options.Ungrouped {
				models = append(models, string(v.Value))
			}
		}
	}
	if strings.Join(models, ",") != "default,auto,claude-sonnet-4.5,claude-haiku-4.5" {
		t.Fatalf("model option %q", models)
	}
	// Reject: the tool never runs, the turn ends with the agent's refusal.
	h.tc.setAnswer(selected(optRejectOnce))
	h.mustPrompt(id, "write it again", acp.StopReasonRefusal)
	if got := lines(ran); len(got) != 1 {
		t.Fatalf("a rejected tool ran: %q", got)
	}
}

// TestProxyFiles: fs/read_text_file is answered from the editor's unsaved buffer when the editor
// advertised fs, and from disk inside the session's folder only when it did not.
func TestProxyFiles(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	q.Set("FAKEQ_ACP_V3=1") // kiro's V3 engine reads files through the client
	q.Set("FAKEQ_ACP_TOOLS=read:notes.txt")
	cwd := t.TempDir()
	notes := filepath.Join(cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("on disk"), 0o600); err != nil {
		t.Fatal(err)
	}

	h := startProxyAgent(t, "", q)
	h.tc.buffers = map[string]string{notes: "unsaved in the editor"}
	h.initializeWith(acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	id := h.newSession(cwd)
	h.mustPrompt(id, "read it", acp.StopReasonEndTurn)
	calls := h.tc.toolCalls(id)
	if len(calls) != 1 || h.tc.toolOutput(id, calls[0].ToolCallId) != "unsaved in the editor" {
		t.Fatalf("read %q, want the editor's buffer", h.tc.toolOutput(id, calls[0].ToolCallId))
	}
	if len(h.tc.reads) != 1 || h.tc.reads[0].SessionId != id {
		t.Fatalf("editor reads %+v", h.tc.reads)
	}
	h.stop()

	h = startProxyAgent(t, "", q)
	h.initialize() // no fs capability
	id = h.newSession(cwd)
	h.mustPrompt(id, "read it", acp.StopReasonEndTurn)
	calls = h.tc.toolCalls(id)
	if got := h.tc.toolOutput(id, calls[0].ToolCallId); got != "on disk" {
		t.Fatalf("read %q, want the file on disk", got)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("TOP-SECRET-CONTENT"), 0o600); err != nil {
		t.Fatal(err)
	}
	q.Set("FAKEQ_ACP_TOOLS=read:" + outside)
	h.mustPrompt(id, "read outside", acp.StopReasonEndTurn)
	calls = h.tc.toolCalls(id)
	if got := h.tc.toolOutput(id, calls[len(calls)-1].ToolCallId); strings.Contains(got, "TOP-SECRET") || got == "" {
		t.Fatalf("a file outside the session's folder: the tool said %q", got)
	}
}

// TestProxyMCPBridge: a stdio MCP server given in session/new (which kiro ignores) is started by
// qkit and called by the agent over the loopback bridge; it stops when the session closes.
func TestProxyMCPBridge(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKEQ_ACP_TOOLS", "mcp:notes/echo")
	h := startProxy(t, "")
	h.initialize()
	cwd := t.TempDir()
	id := h.newSessionWith(cwd, []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "notes", Command: os.Args[0],
		Args: []string{}, Env: []acp.EnvVariable{{Name: "ACPTEST_MCP_SERVER", Value: "1"}, {Name: "ACPTEST_MCP_PID", Value: pidFile}}}}}).SessionId
	h.mustPrompt(id, "use the notes server", acp.StopReasonEndTurn)
	calls := h.tc.toolCalls(id)
	if len(calls) != 1 {
		t.Fatalf("tool calls %+v", calls)
	}
	if got := h.tc.toolOutput(id, calls[0].ToolCallId); got != "echo from the stdio server: from fakeq" {
		t.Fatalf("the MCP tool said %q", got)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pidFile)))))
	if pid == 0 || !alive(pid) {
		t.Fatalf("the bridged server is not running (pid %d)", pid)
	}
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestProxyLoadAfterRestart: sessions are listed from qkit's table (with titles and the cwd
// filter; kiro has no session/list), a load after a restart replays the agent's own session and
// the conversation goes on in it, and a closed session can be loaded again.
func TestProxyLoadAfterRestart(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_OUTPUT=first answer")
	terminated := filepath.Join(t.TempDir(), "terminated")
	q.Set("FAKEQ_ACP_TERMINATED=" + terminated)
	db := filepath.Join(t.TempDir(), "qkit.db")
	h := startProxyAgent(t, db, q)
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.mustPrompt(id, "remember the word apple", acp.StopReasonEndTurn)
	h.stop()

	h = startProxyAgent(t, db, q)
	h.initialize()
	listAndLoad(t, h, id, cwd, "remember the word apple", "user: remember the word apple|agent: first answer")
	// The replay was the agent's: its session was loaded, not replaced.
	before, _ := h.store.Get(context.Background(), string(id))
	if before.AgentSession == "" || before.Backend != "acp" {
		t.Fatalf("stored %+v", before)
	}
	q.Set("FAKEQ_OUTPUT=second answer")
	h.mustPrompt(id, "which word?", acp.StopReasonEndTurn)
	if after, _ := h.store.Get(context.Background(), string(id)); after.AgentSession != before.AgentSession {
		t.Fatalf("the agent session changed from %s to %s", before.AgentSession, after.AgentSession)
	}
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	// The agent was told to drop its session (kiro's _kiro.dev/session/terminate) before the
	// close was answered; the session is still loadable.
	if got := lines(terminated); len(got) != 1 || got[0] != before.AgentSession {
		t.Fatalf("terminated %q, want [%s]", got, before.AgentSession)
	}
	if _, err := h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("resume after close: %v", err)
	}
	h.mustPrompt(id, "and now?", acp.StopReasonEndTurn)
	if after, _ := h.store.Get(context.Background(), string(id)); after.AgentSession != before.AgentSession {
		t.Fatalf("after close and resume the agent session is %s, want %s loaded again", after.AgentSession, before.AgentSession)
	}
}

// listAndLoad checks, after a restart, that session/list names session id with its title (and
// that the cwd filter leaves it out elsewhere), loads it, and checks the replay (role: text,
// joined with "|").
func listAndLoad(t *testing.T, h *harness, id acp.SessionId, cwd, title, replay string) {
	t.Helper()
	list, err := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionId != id || list.Sessions[0].Title == nil || *list.Sessions[0].Title != title {
		t.Fatalf("list %+v %v", list, err)
	}
	other := t.TempDir()
	if list, _ := h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{Cwd: &other}); len(list.Sessions) != 0 {
		t.Fatalf("cwd filter: %+v", list.Sessions)
	}
	if _, err := h.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := h.tc.transcript(id); strings.Join(got, "|") != replay {
		t.Fatalf("replay %q", got)
	}
}

// TestProxyAgentDiesMidTurn: the turn ends with an error message, and the session goes on in a
// new agent once the prompt comes again.
func TestProxyAgentDiesMidTurn(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ACP_BAD=die", "FAKEQ_OUTPUT=partial")
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "go", acp.StopReasonRefusal)
	if got := h.tc.agentText(id); !strings.Contains(got, "the agent ended during the turn") || !strings.Contains(got, "the session is kept") {
		t.Fatalf("reply %q", got)
	}
	q.Set("FAKEQ_ACP_BAD=")
	q.Set("FAKEQ_OUTPUT=back again")
	h.mustPrompt(id, "again", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "back again") {
		t.Fatalf("reply after the agent died %q", got)
	}
}

// TestProxyFallsBackToText: an agent that does not speak ACP (q 1.19.7 has no acp subcommand)
// leaves the sessions on the text path, with the reason logged.
func TestProxyFallsBackToText(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ACP_BAD=exit", "FAKEQ_OUTPUT=from chat")
	logs := &syncBuf{}
	h := startWith(t, "", func(o *Options) { useAgent(q)(o); o.Backend = acpclient.BackendAuto; o.Logger = newLogger(logs) })
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "hi", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "from chat") {
		t.Fatalf("reply %q", got)
	}
	if !strings.Contains(logs.String(), "the agent does not speak ACP") {
		t.Fatalf("no reason logged:\n%s", logs.String())
	}
	rec, _ := h.store.Get(context.Background(), string(id))
	if rec.Backend != "text" {
		t.Fatalf("backend %q", rec.Backend)
	}
}

// TestProxyCancelMidToolCall: session/cancel reaches the agent while a tool runs, the prompt
// answers cancelled, and once the server is done no process of the turn is left.
func TestProxyCancelMidToolCall(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The tool's shell starts a child and waits for it: the PID written is the child's, which
	// outlives a cancel that kills the shell alone, as a faithful agent's would not.
	q.Set("FAKEQ_ACP_TOOLS=shell:sleep 60 & echo $! > " + pidFile + "; wait")
	q.Set("FAKEQ_GRANDCHILD=" + filepath.Join(t.TempDir(), "grandchild"))
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	pid := cancelMidToolCall(t, h, id, pidFile)
	// The agent stopped its tool, with the tool's own children, on the cancel: gone while qkit
	// and the agent still run.
	waitGone(t, pid)
}

// cancelMidToolCall prompts session id, whose agent runs a tool that writes its PID to pidFile and
// sleeps; once the tool runs it sends session/cancel, checks that the prompt answers cancelled,
// and returns the tool's PID.
func cancelMidToolCall(t *testing.T, h *harness, id acp.SessionId, pidFile string) int {
	t.Helper()
	done := make(chan acp.StopReason, 1)
	go func() {
		r, _ := h.prompt(id, acp.TextBlock("sleep"))
		done <- r
	}()
	h.tc.waitFor(t, "the tool to start", func() bool { return len(lines(pidFile)) > 0 })
	if err := h.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r != acp.StopReasonCancelled {
			t.Fatalf("stop reason %q", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the prompt did not end after session/cancel")
	}
	pid, _ := strconv.Atoi(lines(pidFile)[0])
	return pid
}

// syncBuf collects log lines written from several goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestProxyContextFilesWithTheFirstPrompt: the context block goes in front of a session's first
// prompt only (the agent keeps its own conversation after that).
func TestProxyContextFilesWithTheFirstPrompt(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ECHO_PROMPT=1")
	h := startWith(t, "", func(o *Options) {
		useAgent(q)(o)
		o.Backend = acpclient.BackendACP
		o.Context = func(cwd string, maxTokens int, prompt string) (string, []string, error) {
			return "--- CONTEXT FILES BEGIN ---\nrules of " + filepath.Base(cwd) + "\n--- CONTEXT FILES END ---\n" + prompt,
				[]string{"dropped 1 file over context.max_tokens: big.md"}, nil
		}
	})
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.mustPrompt(id, "first", acp.StopReasonEndTurn)
	h.mustPrompt(id, "second", acp.StopReasonEndTurn)
	got := h.tc.agentText(id)
	if strings.Count(got, "CONTEXT FILES BEGIN") != 1 || !strings.Contains(got, "rules of "+filepath.Base(cwd)) ||
		!strings.Contains(got, "first") || !strings.Contains(got, "second") {
		t.Fatalf("the agent was given %q", got)
	}
	if i, j := strings.Index(got, "CONTEXT FILES BEGIN"), strings.Index(got, "first"); i > j {
		t.Fatalf("the context block came after the prompt: %q", got)
	}
	// The editor is told what the block left out, once, before the agent's reply (as ask says it on
	// stderr); the agent is not given it (its echo would repeat it).
	const notice = "qkit: warning: dropped 1 file over context.max_tokens: big.md\n"
	if !strings.HasPrefix(got, notice) || strings.Count(got, "qkit: warning") != 1 {
		t.Fatalf("the editor's text %q, want it to start with %q once", got, notice)
	}
}

// TestProxyTypeScriptStandIn runs the proxy path in front of interop/stand-in-agent.js, the second
// stand-in agent, on the official TypeScript SDK's agent side: its own session and option ids,
// a tool approved once that runs once, the editor's buffer read through fs, the standard
// usage_update passed through. It needs node and interop's node_modules (make interop installs
// them), and is skipped without them.
func TestProxyTypeScriptStandIn(t *testing.T) {
	script := fakeqtest.TypeScriptAgent(t)
	cwd := t.TempDir()
	notes := filepath.Join(cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("on disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	t.Setenv("KIRO_API_KEY", "test") // the stand-in has no whoami
	t.Setenv("TS_AGENT_TOOLS", "echo hi")
	t.Setenv("TS_AGENT_RAN", ran)
	t.Setenv("TS_AGENT_READ", "notes.txt")
	h := startWith(t, "", func(o *Options) { o.Backend = acpclient.BackendACP; o.Limits.Command = script })
	h.tc.buffers = map[string]string{notes: "unsaved in the editor"}
	h.initializeWith(acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true}})
	id := h.newSession(cwd)
	h.tc.setAnswer(allowOnceByKind)
	h.mustPrompt(id, "go", acp.StopReasonEndTurn)
	if r := <-h.tc.asked; r.SessionId != id {
		t.Fatalf("asked for session %s", r.SessionId)
	}
	if got := lines(ran); strings.Join(got, " ") != "echo hi" {
		t.Fatalf("the tool ran %q, want once", got)
	}
	calls := h.tc.toolCalls(id)
	if len(calls) != 2 || h.tc.toolOutput(id, calls[1].ToolCallId) != "unsaved in the editor" {
		t.Fatalf("tool calls %+v", calls)
	}
	if !strings.Contains(h.tc.agentText(id), "chunk 3 of go") {
		t.Fatalf("reply %q", h.tc.agentText(id))
	}
	if h.tc.count(id, func(u acp.SessionUpdate) bool { return u.UsageUpdate != nil && u.UsageUpdate.Used == 5000 }) != 1 {
		t.Fatal("the agent's usage_update did not pass through")
	}
}

// TestProxyHTTPMCPPassesThrough: an HTTP MCP server from the editor is given to the agent as is.
func TestProxyHTTPMCPPassesThrough(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "http echo: " + a.Text + " " + req.Extra.Header.Get("X-Token")}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	q.Set("FAKEQ_ACP_TOOLS=mcp:web/echo")
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSessionWith(t.TempDir(), []acp.McpServer{{Http: &acp.McpServerHttpInline{Type: "http", Name: "web", Url: ts.URL,
		Headers: []acp.HttpHeader{{Name: "X-Token", Value: "t0k"}}}}}).SessionId
	h.mustPrompt(id, "use web", acp.StopReasonEndTurn)
	calls := h.tc.toolCalls(id)
	if len(calls) != 1 || h.tc.toolOutput(id, calls[0].ToolCallId) != "http echo: from fakeq t0k" {
		t.Fatalf("tool output %q", h.tc.toolOutput(id, calls[0].ToolCallId))
	}
}

// TestProxySlashCommandsAndModel: qkit's slash commands are offered with the agent's and answered
// by qkit, not the agent; the model option takes the agent's models only.
func TestProxySlashCommandsAndModel(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	runs := filepath.Join(t.TempDir(), "ran")
	q.Set("FAKEQ_ACP_RAN=" + runs)
	q.Set("FAKEQ_ECHO_PROMPT=1")
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	h.tc.waitFor(t, "available_commands_update", func() bool {
		return h.tc.count(id, func(u acp.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil }) > 0
	})
	h.mustPrompt(id, "/context show", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "ran (acp): context show") {
		t.Fatalf("/context show answered %q", got)
	}
	_, err := h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "gpt-9"}})
	wantCode(t, "a model the agent does not list", err, -32602, "claude-haiku-4.5")
	resp, err := h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "claude-haiku-4.5"}})
	if err != nil || resp.ConfigOptions[0].Select == nil || resp.ConfigOptions[0].Select.CurrentValue != "claude-haiku-4.5" {
		t.Fatalf("set model: %+v %v", resp, err)
	}
}

// TestProxyTerminals: with an editor that advertised terminals, the agent's terminal/* requests
// run there, under qkit's session id.
func TestProxyTerminals(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ACP_V3=1", "FAKEQ_ACP_TOOLS=shell:echo hi")
	h := startProxyAgent(t, "", q)
	h.tc.terminal = true
	h.initializeWith(acp.ClientCapabilities{Terminal: true})
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "run it", acp.StopReasonEndTurn)
	calls := h.tc.toolCalls(id)
	if len(calls) != 1 || h.tc.toolOutput(id, calls[0].ToolCallId) != "from the editor's terminal" {
		t.Fatalf("tool output %q", h.tc.toolOutput(id, calls[0].ToolCallId))
	}
	if len(h.tc.terminals) != 1 || h.tc.terminals[0].SessionId != id || strings.Join(h.tc.terminals[0].Args, " ") != "-c echo hi" {
		t.Fatalf("terminals %+v", h.tc.terminals)
	}
}

// TestProxyModes: the agent's modes (kiro's agents) come with session/new, and session/set_mode
// goes to the agent.
func TestProxyModes(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	h := startProxyAgent(t, "", q)
	h.initialize()
	resp := h.newSessionWith(t.TempDir(), []acp.McpServer{})
	if resp.Modes == nil || resp.Modes.CurrentModeId != "kiro_default" || len(resp.Modes.AvailableModes) != 2 {
		t.Fatalf("modes %+v", resp.Modes)
	}
	if _, err := h.conn.SetSessionMode(context.Background(), acp.SetSessionModeRequest{SessionId: resp.SessionId, ModeId: "reviewer"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
}

// TestProxyAgentLoggedOut: kiro refusing session/new for want of a login is the protocol's
// "authentication required", not an internal error.
func TestProxyAgentLoggedOut(t *testing.T) {
	t.Setenv("KIRO_API_KEY", "set") // qkit's own check passes; the agent still refuses
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	t.Setenv("FAKEQ_ACP_LOGIN", "error")
	h := startProxy(t, "")
	h.initialize()
	_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	wantCode(t, "session/new with the agent logged out", err, -32000, "Authentication required")
}

// TestProxyAgentKiroLogin: an agent that answers initialize with kiro's kiro-login method (no
// login stored) and has no KIRO_API_KEY would wait forever for a device login in session/new;
// the proxy stops it at once and answers "authentication required", with how to log in. (Here
// qkit's own check passed at initialize, which started the agent: the login went away before the
// agent was started again.)
func TestProxyAgentKiroLogin(t *testing.T) {
	t.Setenv("KIRO_API_KEY", "")
	t.Setenv("AMAZON_Q_SIGV4", "")
	t.Setenv("FAKEQ_FLAVOUR", "kiro")
	t.Setenv("FAKEQ_ACP_BAD", "die")
	h := startProxy(t, "")
	h.initialize()
	h.agentDies()
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang fails, not blocks
	defer cancel()
	_, err := h.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	wantCode(t, "session/new with the agent waiting for a login", err, -32000, "Authentication required: run "+filepath.Base(os.Args[0])+" login in a terminal")
}

// TestProxyTypeScriptStandInBridge: the TypeScript stand-in calls a stdio MCP server of the
// editor's through the bridge, and its edit arrives with the diff (refused: it never asked
// permission, and the editor has no fs).
func TestProxyTypeScriptStandInBridge(t *testing.T) {
	script := fakeqtest.TypeScriptAgent(t)
	t.Setenv("KIRO_API_KEY", "test")
	t.Setenv("TS_AGENT_MCP", "notes/echo")
	t.Setenv("TS_AGENT_WRITE", "out.txt")
	t.Setenv("TS_AGENT_CHUNKS", "1")
	h := startWith(t, "", func(o *Options) { o.Backend = acpclient.BackendACP; o.Limits.Command = script })
	h.initialize()
	cwd := t.TempDir()
	id := h.newSessionWith(cwd, []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "notes", Command: os.Args[0],
		Args: []string{}, Env: []acp.EnvVariable{{Name: "ACPTEST_MCP_SERVER", Value: "1"}}}}}).SessionId
	h.mustPrompt(id, "go", acp.StopReasonEndTurn)
	calls := h.tc.toolCalls(id)
	if len(calls) != 2 || h.tc.toolOutput(id, calls[0].ToolCallId) != "echo from the stdio server: from the ts agent" {
		t.Fatalf("tool calls %+v, first said %q", calls, h.tc.toolOutput(id, calls[0].ToolCallId))
	}
	if d := calls[1].Content; len(d) != 1 || d[0].Diff == nil || d[0].Diff.Path != filepath.Join(cwd, "out.txt") {
		t.Fatalf("edit %+v", calls[1])
	}
	// The stand-in writes without asking permission; the editor has no fs, so qkit would serve it,
	// and qkit's rule refuses it (TestProxyUnaskedWriteRefused).
	if _, err := os.Stat(filepath.Join(cwd, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unasked write was served: %v", err)
	}
	if out := h.tc.toolOutput(id, calls[1].ToolCallId); !strings.Contains(out, "did not ask the editor's permission") {
		t.Fatalf("the edit said %q, want qkit's refusal", out)
	}
}

// allowOnceByKind answers a permission request with its allow_once option, whatever its id (the
// TypeScript stand-in's ids are "yes"/"always"/"no").
func allowOnceByKind(_ context.Context, r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	for _, o := range r.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(o.OptionId)}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
}

// startTSProxy is an `acp serve` on the proxy path in front of the TypeScript stand-in.
func startTSProxy(t *testing.T, script, db string) *harness {
	t.Helper()
	return startWith(t, db, func(o *Options) { o.Backend = acpclient.BackendACP; o.Limits.Command = script })
}

// TestProxyTypeScriptStandInLoadAfterRestart: list (titles, cwd filter), load after a restart and
// close in front of the TypeScript stand-in, which cannot load sessions: qkit replays its own
// transcript, a new agent session takes the old one's place and the next prompt carries the
// conversation; a closed session is resumed and goes on.
func TestProxyTypeScriptStandInLoadAfterRestart(t *testing.T) {
	script := fakeqtest.TypeScriptAgent(t)
	t.Setenv("KIRO_API_KEY", "test")
	t.Setenv("TS_AGENT_CHUNKS", "1")
	db := filepath.Join(t.TempDir(), "qkit.db")
	cwd := t.TempDir()
	h := startTSProxy(t, script, db)
	h.initialize()
	id := h.newSession(cwd)
	h.mustPrompt(id, "remember pear", acp.StopReasonEndTurn)
	h.stop()

	h = startTSProxy(t, script, db)
	h.initialize()
	listAndLoad(t, h, id, cwd, "remember pear", "user: remember pear|agent: chunk 1 of remember pear\n")
	h.mustPrompt(id, "which fruit?", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "chunk 1 of --- CONVERSATION SO FAR ---") || !strings.Contains(got, "which fruit?") {
		t.Fatalf("the new agent session was not given the conversation: %q", got)
	}
	if _, err := h.conn.CloseSession(context.Background(), acp.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.ResumeSession(context.Background(), acp.ResumeSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("resume after close: %v", err)
	}
	h.mustPrompt(id, "and now?", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "and now?") {
		t.Fatalf("reply after resume %q", got)
	}
}

// TestProxyTypeScriptStandInCancelMidToolCall: session/cancel reaches the TypeScript stand-in while
// its tool (a shell it started, approved once) runs; the stand-in stops the tool, the prompt
// answers cancelled, and the tool's process is gone while qkit and the agent still run.
func TestProxyTypeScriptStandInCancelMidToolCall(t *testing.T) {
	script := fakeqtest.TypeScriptAgent(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("KIRO_API_KEY", "test")
	t.Setenv("TS_AGENT_TOOLS", "echo $$ > "+pidFile+"; exec sleep 60")
	h := startTSProxy(t, script, "")
	h.tc.setAnswer(allowOnceByKind)
	h.initialize()
	id := h.newSession(t.TempDir())
	pid := cancelMidToolCall(t, h, id, pidFile)
	waitGone(t, pid)
}

// TestProxySubagentCredits: kiro's subagent reports its credits under its own session id; the
// editor gets them as a usage_update of the session whose turn started it, and nothing of the
// subagent's session is kept once the turn is over.
func TestProxySubagentCredits(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ACP_SUBAGENT=1", "FAKEQ_OUTPUT=done")
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "go", acp.StopReasonEndTurn)
	h.tc.waitFor(t, "the subagent's credits as a usage_update", func() bool {
		return h.tc.count(id, func(u acp.SessionUpdate) bool {
			if u.UsageUpdate == nil {
				return false
			}
			q, _ := u.UsageUpdate.Meta["qkit"].(map[string]any)
			kiro, _ := q["kiro"].(map[string]any)
			return q["subagentSession"] != nil && kiro["credits"] == 0.25
		}) == 1
	})
	if got := h.tc.agentText(id); strings.Contains(got, "subagent thinking") {
		t.Fatalf("the subagent's own text reached the session's reply: %q", got)
	}
}

// TestProxyAgentDiedSessionLoads: after the agent died mid-turn the session stays loadable:
// session/load (the session still open in this connection) starts a new agent, which loads its
// own session, and the conversation goes on in it.
func TestProxyAgentDiedSessionLoads(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t, "FAKEQ_ACP_BAD=die", "FAKEQ_OUTPUT=partial")
	h := startProxyAgent(t, "", q)
	h.initialize()
	cwd := t.TempDir()
	id := h.newSession(cwd)
	h.mustPrompt(id, "go", acp.StopReasonRefusal)
	before, _ := h.store.Get(context.Background(), string(id))
	q.Set("FAKEQ_ACP_BAD=")
	q.Set("FAKEQ_OUTPUT=back again")
	if _, err := h.conn.LoadSession(context.Background(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("load after the agent died: %v", err)
	}
	// The new agent replayed its own session (the fake keeps the prompt it got before dying).
	if got := h.tc.transcript(id); len(got) == 0 || got[len(got)-1] != "user: go" {
		t.Fatalf("replay %q", got)
	}
	h.mustPrompt(id, "again", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "back again") {
		t.Fatalf("reply after the load %q", got)
	}
	if after, _ := h.store.Get(context.Background(), string(id)); after.AgentSession != before.AgentSession {
		t.Fatalf("the agent session changed from %s to %s: the new agent did not load it", before.AgentSession, after.AgentSession)
	}
}

// refusingAgent writes an agent, named kiro-cli, that is the fake until the file broken exists;
// then its `acp` answers initialize (unless refuse is "initialize") and refuses every refuse
// request with a JSON-RPC internal error saying "no space left on device".
func refusingAgent(t *testing.T, refuse string) (command, broken string) {
	t.Helper()
	command = filepath.Join(t.TempDir(), "kiro-cli")
	script := "#!/bin/sh\nif [ \"$1\" != acp ] || [ ! -e \"$0.broken\" ]; then exec \"$QKIT_TEST_FAKE\" \"$@\"; fi\n" +
		"while IFS= read -r line; do\n" +
		"  id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\\([0-9][0-9]*\\).*/\\1/p')\n" +
		"  case \"$line\" in\n" +
		"  *'\"method\":\"" + refuse + "\"'*) printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32603,\"message\":\"no space left on device\"}}\\n' \"$id\";;\n" +
		"  *'\"method\":\"initialize\"'*) printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":1,\"agentCapabilities\":{}}}\\n' \"$id\";;\n" +
		"  esac\n" +
		"done\n"
	if err := os.WriteFile(command, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QKIT_TEST_FAKE", os.Args[0])
	return command, command + ".broken"
}

// TestProxyAgentRefusesSession: an agent that answers initialize but fails session/new gives the
// editor an internal error saying the agent did not open a session, with the agent's reason.
func TestProxyAgentRefusesSession(t *testing.T) {
	command, broken := refusingAgent(t, "session/new")
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := startWith(t, "", func(o *Options) { o.Backend = acpclient.BackendACP; o.Limits.Command = command })
	h.initialize()
	_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	wantCode(t, "session/new refused by the agent", err, -32603, "the agent did not open a session: session/new: the agent answered error -32603: no space left on device")
	if list, err := h.store.List(context.Background(), "", "", 10); err != nil || len(list) != 0 {
		t.Fatalf("a session was stored: %v %v", list, err)
	}
}

// TestProxyAgentCannotTakePrompt: when the agent died and the one started for the next prompt
// fails (here at initialize), the editor reads why in the reply, and the turn is refused.
func TestProxyAgentCannotTakePrompt(t *testing.T) {
	command, broken := refusingAgent(t, "initialize")
	t.Setenv("FAKEQ_ACP_BAD", "die")
	t.Setenv("FAKEQ_OUTPUT", "partial")
	t.Setenv("HOME", t.TempDir())
	h := startWith(t, "", func(o *Options) { o.Backend = acpclient.BackendACP; o.Limits.Command = command })
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "go", acp.StopReasonRefusal)
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.mustPrompt(id, "again", acp.StopReasonRefusal)
	got := h.tc.agentText(id)
	if !strings.Contains(got, "\n\nkiro-cli failed: the agent could not take the prompt: initialize: the agent answered error -32603: no space left on device\n") {
		t.Fatalf("reply %q", got)
	}
}

// TestProxyAgentKiroLoginOnLoad: a stored session loaded (or resumed) after a restart, with the
// agent now answering initialize with kiro's kiro-login method, is "authentication required",
// as session/new is, not an internal error.
func TestProxyAgentKiroLoginOnLoad(t *testing.T) {
	t.Setenv("KIRO_API_KEY", "")
	t.Setenv("AMAZON_Q_SIGV4", "")
	t.Setenv("FAKEQ_FLAVOUR", "kiro")
	db := filepath.Join(t.TempDir(), "qkit.db")
	cwd := t.TempDir()
	h := startProxy(t, db)
	h.initialize()
	id := h.newSession(cwd)
	h.stop()

	t.Setenv("FAKEQ_ACP_BAD", "die")
	h = startProxy(t, db)
	h.initialize()
	h.agentDies()
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang fails, not blocks
	defer cancel()
	_, err := h.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/load with the agent waiting for a login", err, -32000, "Authentication required")
	_, err = h.conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/resume with the agent waiting for a login", err, -32000, "Authentication required")
}

// TestProxyAgentMalformedStopped: an agent that sends broken JSON mid-turn can no longer be
// talked to, though it still runs; the proxy stops it and what it started (its process group)
// while acp serve goes on, rather than leaving it behind when the next agent starts.
func TestProxyAgentMalformedStopped(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	q.Set("FAKEQ_ACP_BAD=malformed")
	q.Set("FAKEQ_GRANDCHILD=" + pidFile)
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	if _, err := h.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}); err != nil {
		t.Logf("prompt: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pidFile)))))
	if pid == 0 {
		t.Fatal("no grandchild pid")
	}
	waitGone(t, pid) // acp serve still runs
}

// TestProxyUnaskedWriteRefused: an editor without fs leaves the files to qkit, and then qkit's
// rule holds on the proxy path too: a write the agent sends without the editor's
// permission for its tool call is refused, and nothing is written; one that belongs to a tool
// call the editor allowed is served while that call runs; after "allow always" for an edit (and
// not after "allow once"), the session's later writes are served. An editor that serves files
// itself decides them.
func TestProxyUnaskedWriteRefused(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	// run serves one prompt to a new agent (the fake reads its environment when it starts) and
	// returns the folder and what the agent was told of its unasked writes.
	run := func(t *testing.T, tools, unasked, answer string, caps acp.ClientCapabilities) (string, string) {
		cwd := t.TempDir()
		ran := filepath.Join(t.TempDir(), "ran")
		q.Set("FAKEQ_ACP_RAN=" + ran)
		q.Set("FAKEQ_ACP_TOOLS=" + tools)
		q.Set("FAKEQ_ACP_UNASKED=" + unasked)
		h := startProxyAgent(t, "", q)
		defer h.stop()
		h.tc.setAnswer(selected(answer))
		h.initializeWith(caps)
		h.mustPrompt(h.newSession(cwd), "write", acp.StopReasonEndTurn)
		return cwd, readFile(t, ran)
	}
	written := func(cwd, name string) bool {
		_, err := os.Stat(filepath.Join(cwd, name))
		return err == nil
	}
	noFS := acp.ClientCapabilities{} // qkit serves files from disk

	cwd, told := run(t, "", "write:unasked.txt", "allow_once", noFS)
	if written(cwd, "unasked.txt") {
		t.Fatal("a write nobody allowed was served")
	}
	if !strings.Contains(told, "unasked write:unasked.txt: refused") || !strings.Contains(told, "did not ask the editor's permission") {
		t.Fatalf("the agent was told %q, want a refusal saying why", told)
	}

	// The same write while a tool call the editor allowed once runs is served.
	cwd, told = run(t, "write:asked.txt", "write:during.txt@1", "allow_once", noFS)
	if !written(cwd, "during.txt") {
		t.Fatalf("a write under the editor's permission was not served: %q", told)
	}

	// Once the allowed call has ended, a write of its own is refused after "allow once", and
	// served after "allow always" (for edits, in this session).
	cwd, told = run(t, "write:first.txt", "write:later.txt", "allow_once", noFS)
	if written(cwd, "later.txt") {
		t.Fatalf("a write after the allowed call ended was served: %q", told)
	}
	cwd, told = run(t, "write:first.txt", "write:later.txt", "allow_always", noFS)
	if !written(cwd, "later.txt") {
		t.Fatalf("a write after allow always for edits was refused: %q", told)
	}

	// An editor that serves files gets the write under the same rule (TestProxyOneRule): an
	// unasked one never reaches it.
	_, told = run(t, "", "write:editor.txt", "allow_once", acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	if !strings.Contains(told, "unasked write:editor.txt: refused") || !strings.Contains(told, "did not ask the editor's permission") {
		t.Fatalf("an unasked write to an editor with fs: the agent was told %q, want qkit's refusal", told)
	}
}

// TestProxyOneRule: an editor that serves files and terminals itself gets the agent's writes and
// commands under the rule qkit keeps when it serves them: only for a tool call the editor allowed
// in this turn while it runs (or after "allow always"), and only with paths and a cwd inside the
// session's folder (links resolved). Anything else is refused before the editor sees it, and
// stderr says so. Reads inside the folder still go to the editor; one outside does not. The
// proxy used to forward all of it as the agent sent it.
func TestProxyOneRule(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t)
	outsideDir := t.TempDir()
	secret := filepath.Join(outsideDir, "secret.txt")
	editorCaps := acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}
	type result struct {
		cwd, told, logs string
		tc              *testClient
		id              acp.SessionId
	}
	run := func(t *testing.T, knobs ...string) result {
		cwd := t.TempDir()
		ran := filepath.Join(t.TempDir(), "ran")
		q.Set("FAKEQ_ACP_RAN=" + ran)
		for _, k := range []string{"FAKEQ_ACP_TOOLS=", "FAKEQ_ACP_UNASKED=", "FAKEQ_ACP_V3="} {
			q.Set(k)
		}
		for _, k := range knobs {
			q.Set(k)
		}
		logs := &syncBuf{}
		h := startWith(t, "", func(o *Options) { useAgent(q)(o); o.Backend = acpclient.BackendACP; o.Logger = newLogger(logs) })
		defer h.stop()
		h.tc.terminal = true
		h.tc.buffers = map[string]string{secret: "TOP-SECRET", filepath.Join(cwd, "notes.txt"): "unsaved in the editor"}
		h.initializeWith(editorCaps)
		id := h.newSession(cwd)
		h.mustPrompt(id, "go", acp.StopReasonEndTurn)
		told, _ := os.ReadFile(ran)
		return result{cwd: cwd, told: string(told), logs: logs.String(), tc: h.tc, id: id}
	}
	editorGot := func(r result) string {
		r.tc.mu.Lock()
		defer r.tc.mu.Unlock()
		var got []string
		for _, w := range r.tc.writes {
			got = append(got, "write "+w.Path)
		}
		for _, c := range r.tc.terminals {
			got = append(got, "terminal "+c.Command+" "+strings.Join(c.Args, " "))
		}
		for _, rd := range r.tc.reads {
			got = append(got, "read "+rd.Path)
		}
		return strings.Join(got, "; ")
	}
	refused := func(t *testing.T, r result, spec, why, logged string) {
		t.Helper()
		if got := editorGot(r); got != "" {
			t.Errorf("the editor got %s", got)
		}
		if !strings.Contains(r.told, "unasked "+spec+": refused") || !strings.Contains(r.told, why) {
			t.Errorf("the agent was told %q, want a refusal saying %q", r.told, why)
		}
		if !strings.Contains(r.logs, logged) {
			t.Errorf("stderr does not say %q:\n%s", logged, r.logs)
		}
	}
	const unasked, outside = "did not ask the editor's permission", "outside the working directory"

	t.Run("unasked write outside", func(t *testing.T) {
		refused(t, run(t, "FAKEQ_ACP_UNASKED=write:"+secret), "write:"+secret, unasked, "refused a write the agent did not ask")
	})
	t.Run("unasked write inside", func(t *testing.T) {
		refused(t, run(t, "FAKEQ_ACP_UNASKED=write:in.txt"), "write:in.txt", unasked, "refused a write the agent did not ask")
	})
	t.Run("granted write inside", func(t *testing.T) {
		r := run(t, "FAKEQ_ACP_TOOLS=write:asked.txt", "FAKEQ_ACP_UNASKED=write:during.txt@1")
		if got, want := editorGot(r), "write "+filepath.Join(r.cwd, "during.txt"); got != want {
			t.Fatalf("the editor got %q, want %q", got, want)
		}
		if r.tc.writes[0].SessionId != r.id || !strings.Contains(r.told, errNoFS.Error()) {
			t.Fatalf("forwarded as %+v; the agent was told %q, want the editor's answer", r.tc.writes[0], r.told)
		}
	})
	t.Run("granted write outside", func(t *testing.T) {
		refused(t, run(t, "FAKEQ_ACP_TOOLS=write:asked.txt", "FAKEQ_ACP_UNASKED=write:"+secret+"@1"), "write:"+secret, outside, "outside the session's folder")
	})
	t.Run("unasked terminal", func(t *testing.T) {
		refused(t, run(t, "FAKEQ_ACP_UNASKED=shell:cat /etc/hostname"), "shell:cat /etc/hostname", unasked, "refused a command the agent did not ask")
	})
	t.Run("granted terminal", func(t *testing.T) {
		r := run(t, "FAKEQ_ACP_V3=1", "FAKEQ_ACP_TOOLS=shell:echo hi")
		if got := editorGot(r); got != "terminal sh -c echo hi" || *r.tc.terminals[0].Cwd != r.cwd {
			t.Fatalf("the editor got %q (cwd %v), want the granted command in the session's folder", got, r.tc.terminals[0].Cwd)
		}
	})
	t.Run("reads", func(t *testing.T) {
		r := run(t, "FAKEQ_ACP_V3=1", "FAKEQ_ACP_TOOLS=read:notes.txt,read:"+secret)
		if got, want := editorGot(r), "read "+filepath.Join(r.cwd, "notes.txt"); got != want {
			t.Fatalf("the editor got %q, want %q (the read outside refused)", got, want)
		}
		if !strings.Contains(r.logs, "outside the session's folder") {
			t.Fatalf("stderr does not say the read outside was refused:\n%s", r.logs)
		}
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProxyShowsAgentTextFiltered: what a person reads of the agent on the proxy path goes
// through the filters of the other paths. The title of a tool call is escaped
// (termtext.VisibleLine) in the permission request the editor shows and in the thread's tool_call,
// so the two agree; the reply and thought chunks lose escape sequences, control and bidi
// characters (termtext.Stripper, as the text path and the ACP backend read the agent), also
// when a sequence is split across chunks, and the transcript keeps what the editor got. The
// proxy used to forward all of it raw.
func TestProxyShowsAgentTextFiltered(t *testing.T) {
	t.Parallel()
	q := newProxyAgent(t,
		`FAKEQ_OUTPUT_QUOTED=A\x1b[31mRED\x1b[0m B\x1b]0;title\x07 C\u202eevil D\x00nul E\u009b31m F\rG`,
		"FAKEQ_SPLIT=3",
		"FAKEQ_ACP_THOUGHT=think\x1b[2J\u202e!",
		"FAKEQ_ACP_TOOLS=shell:echo \x1b[2J\u202ehi")
	h := startProxyAgent(t, "", q)
	h.initialize()
	id := h.newSession(t.TempDir())
	h.mustPrompt(id, "go", acp.StopReasonEndTurn)
	const title = `Running: echo \x1b[2J\u202ehi`
	select {
	case r := <-h.tc.asked:
		if r.ToolCall.Title == nil || *r.ToolCall.Title != title {
			t.Errorf("the permission request's title %q, want %q", ptrText(r.ToolCall.Title), title)
		}
	default:
		t.Fatal("the editor was not asked")
	}
	if calls := h.tc.toolCalls(id); len(calls) != 1 || calls[0].Title != title {
		t.Errorf("the thread's tool calls %+v, want one titled %q", calls, title)
	}
	const reply = "ARED B Cevil Dnul E FG"
	if got := h.tc.agentText(id); strings.TrimSpace(got) != reply {
		t.Errorf("the editor got the reply %q, want %q", got, reply)
	}
	var thought strings.Builder
	h.tc.mu.Lock()
	for _, n := range h.tc.updates {
		if c := n.Update.AgentThoughtChunk; c != nil && c.Content.Text != nil {
			thought.WriteString(c.Content.Text.Text)
		}
	}
	h.tc.mu.Unlock()
	if thought.String() != "think!" {
		t.Errorf("the editor got the thought %q, want %q", thought.String(), "think!")
	}
	msgs, err := h.store.Messages(context.Background(), string(id))
	if err != nil || len(msgs) != 2 || strings.TrimSpace(msgs[1].Text) != reply {
		t.Fatalf("the transcript %+v (%v), want the reply as the editor got it", msgs, err)
	}
}

func ptrText(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
