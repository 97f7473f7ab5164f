//go:build !qkit_lite

package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
)

// serveOnPipes gives a's stdin and stdout to a client: what the client writes is the server's
// stdin, what the server writes is the client's to read. serve runs in the background; wait
// returns its error once it returned (after the client closed its end, or its context ended).
func serveOnPipes(t *testing.T, a *app.App, serve func() error) (fromServer io.ReadCloser, toServer io.WriteCloser, wait func() error) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	a.IO.In, a.IO.Out = c2sR, s2cW
	stopped := make(chan struct{})
	var err error
	go func() {
		defer close(stopped)
		err = serve()
		_ = s2cW.Close()
	}()
	wait = func() error {
		t.Helper()
		select {
		case <-stopped:
			return err
		case <-time.After(time.Minute):
			t.Fatal("the server did not stop")
			return nil
		}
	}
	t.Cleanup(func() {
		_ = c2sW.Close()
		_ = s2cR.Close()
		_ = wait()
	})
	return s2cR, c2sW, wait
}

// TestMCPRunFunctions drives mcp serve (through the MCP SDK's client), mcp tools and mcp tools
// help through their run functions.
func TestMCPRunFunctions(t *testing.T) {
	a, _, out, _ := agentApp(t, "q", []string{"FAKEQ_OUTPUT=from the agent"}, "tools.enabled=q-developer-agent")
	if err := runMCPServe(t.Context(), a, &mcpServeOptions{eofGrace: -time.Second}); output.Code(err) != output.ExitUsage ||
		err.Error() != "invalid --eof-grace -1s: it must not be negative" {
		t.Fatalf("--eof-grace -1s: %v (exit %d)", err, output.Code(err))
	}

	if err := runMCPTools(t.Context(), a, &mcpToolsOptions{asJSON: true}); err != nil {
		t.Fatal(err)
	}
	var entries []mcpserver.Entry
	if err := json.Unmarshal(out.Bytes(), &entries); err != nil {
		t.Fatalf("mcp tools --json: %v %s", err, out.String())
	}
	enabled := map[string]bool{}
	for _, e := range entries {
		enabled[e.Name] = e.Enabled
	}
	if !enabled["ask_user_questions"] || !enabled["internal_command"] || !enabled["qkit_help"] || !enabled["q-developer-agent"] {
		t.Fatalf("mcp tools --json: %s", out.String())
	}
	out.Reset()
	if err := runMCPTools(t.Context(), a, &mcpToolsOptions{}); err != nil || !strings.Contains(out.String(), "q-developer-agent\tenabled (optional)\t") {
		t.Fatalf("mcp tools: %v %q", err, out.String())
	}
	out.Reset()
	if err := runMCPToolsHelp(a, "q-developer-agent"); err != nil || !strings.HasPrefix(out.String(), "# q-developer-agent\n\nState: enabled (optional)\n") {
		t.Fatalf("mcp tools help: %v %q", err, out.String())
	}
	if err := runMCPToolsHelp(a, "nosuch"); output.Code(err) != output.ExitNotFound || !strings.Contains(err.Error(), `unknown tool "nosuch"`) {
		t.Fatalf("mcp tools help nosuch: %v (exit %d)", err, output.Code(err))
	}

	fromServer, toServer, wait := serveOnPipes(t, a, func() error {
		return runMCPServe(context.Background(), a, &mcpServeOptions{eofGrace: time.Minute})
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "test"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: fromServer, Writer: toServer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "qkit" {
		t.Fatalf("server name %q", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("q-developer-agent: %v %+v", err, res)
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(text.Text, "from the agent") {
		t.Fatalf("q-developer-agent said %#v", res.Content[0])
	}
	_ = cs.Close() // the end of the server's stdin
	if err := wait(); err != nil {
		t.Fatalf("mcp serve at the end of stdin: %v", err)
	}
}

// acpTestClient is the editor's end of acp serve: it keeps the agent's messages; the server under
// test never asks it for files, terminals or permission (the chat backend, no tools).
type acpTestClient struct {
	acp.Client
	mu   sync.Mutex
	text strings.Builder
}

func (c *acpTestClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.mu.Lock()
		c.text.WriteString(u.Content.Text.Text)
		c.mu.Unlock()
	}
	return nil
}

func (c *acpTestClient) said() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text.String()
}

// TestACPServeRunFunction drives acp serve through runACPServe: the feature gate, the refused
// flags, and a prompt answered over the ACP SDK's client.
func TestACPServeRunFunction(t *testing.T) {
	a, _, _, _ := agentApp(t, "q", []string{"FAKEQ_OUTPUT=from the agent"}, "agent.backend=chat")
	t.Setenv("GOMEMLIMIT", "off") // acp serve sets a memory limit only when GOMEMLIMIT is not set
	if err := runACPServe(t.Context(), a, &acpServeOptions{}); output.Code(err) != output.ExitFailure || err.Error() != acpDisabled {
		t.Fatalf("without acp.enabled: %v (exit %d)", err, output.Code(err))
	}

	a, _, _, _ = agentApp(t, "q", []string{"FAKEQ_OUTPUT=from the agent"}, "agent.backend=chat", "acp.enabled=true", "agent.models=claude-sonnet-4,claude-3.7-sonnet")
	t.Setenv("GOMEMLIMIT", "off")
	if err := runACPServe(t.Context(), a, &acpServeOptions{agent: "-x"}); output.Code(err) != output.ExitUsage || !strings.Contains(err.Error(), `invalid --agent "-x"`) {
		t.Fatalf("--agent -x: %v (exit %d)", err, output.Code(err))
	}
	if err := runACPServe(t.Context(), a, &acpServeOptions{model: "m3"}); output.Code(err) != output.ExitUsage || !strings.Contains(err.Error(), `unknown model "m3"`) {
		t.Fatalf("--model m3: %v (exit %d)", err, output.Code(err))
	}

	fromServer, toServer, wait := serveOnPipes(t, a, func() error {
		return runACPServe(context.Background(), a, &acpServeOptions{model: "claude-sonnet-4"})
	})
	client := &acpTestClient{}
	conn := acp.NewClientSideConnection(client, toServer, fromServer)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn || !strings.Contains(client.said(), "from the agent") {
		t.Fatalf("prompt: %v %+v, the agent said %q", err, res, client.said())
	}
	_ = toServer.Close()
	if err := wait(); err != nil {
		t.Fatalf("acp serve at the end of stdin: %v", err)
	}
}

// TestQuestionsServeRunFunction drives questions serve through runQuestionsServe: the link on
// stdout (--json), the page behind it, the stop when ctx ends; a non-loopback --addr is refused.
func TestQuestionsServeRunFunction(t *testing.T) {
	a, _, _ := testApp(t)
	if err := runQuestionsServe(t.Context(), a, &serveOptions{addr: "0.0.0.0:0"}); output.Code(err) != output.ExitUsage ||
		!strings.Contains(err.Error(), "pass --allow-remote") {
		t.Fatalf("--addr 0.0.0.0:0: %v (exit %d)", err, output.Code(err))
	}
	var errOut syncBuffer
	a.IO.ErrOut = &errOut
	ctx, cancel := context.WithCancel(t.Context())
	fromServer, _, wait := serveOnPipes(t, a, func() error {
		return runQuestionsServe(ctx, a, &serveOptions{addr: "127.0.0.1:0", asJSON: true})
	})
	line, err := bufio.NewReader(fromServer).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ URL, Address, Token string }
	if err := json.Unmarshal([]byte(line), &started); err != nil || started.Token == "" || !strings.Contains(started.URL, started.Token) {
		t.Fatalf("--json: %v %q", err, line)
	}
	jar, _ := cookiejar.New(nil) // the page keeps the link's token in a cookie
	resp, err := (&http.Client{Jar: jar}).Get(started.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page: %s", resp.Status)
	}
	cancel()
	if err := wait(); err != nil || !strings.Contains(errOut.String(), "qkit: stopped serving questions") {
		t.Fatalf("stopped: %v %q", err, errOut.String())
	}
}

// TestQuestionsServeRemoteWarning: on every address at once the link shows 127.0.0.1, and the warning
// says to put this machine's address in its place; on one address (192.0.2.2) the link already shows
// it, and the warning says to open the link as printed.
func TestQuestionsServeRemoteWarning(t *testing.T) {
	for _, tc := range []struct {
		addr      net.TCPAddr
		want, not string
	}{
		{net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "use this machine's address in place of 127.0.0.1", "as printed"},
		{net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "use this machine's address in place of 127.0.0.1", "as printed"},
		{net.TCPAddr{IP: net.ParseIP("192.0.2.2"), Port: 8080}, "Another device opens the link as printed.", "127.0.0.1"},
	} {
		got := remoteWarning(&tc.addr)
		if !strings.HasPrefix(got, "qkit: serving on "+tc.addr.String()+", reachable from other machines") ||
			!strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("%s: %q", tc.addr.String(), got)
		}
	}
}

// TestQuestionsWaitRunFunction drives questions wait through runQuestionsWait: a bad --timeout,
// no set in time (exit 124, and the timeout printed as JSON), and the pending set printed as JSON.
func TestQuestionsWaitRunFunction(t *testing.T) {
	a, out, _ := testApp(t)
	if err := runQuestionsWait(t.Context(), a, &waitOptions{timeout: "soon"}); output.Code(err) != output.ExitUsage ||
		!strings.HasPrefix(err.Error(), `invalid --timeout "soon"`) {
		t.Fatalf("--timeout soon: %v (exit %d)", err, output.Code(err))
	}
	// A deadline of the test's own, so that a --timeout not kept fails here instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := runQuestionsWait(ctx, a, &waitOptions{timeout: "1ms"}); output.Code(err) != output.ExitTimeout || ctx.Err() != nil {
		t.Fatalf("--timeout 1ms with nothing pending: %v (exit %d)", err, output.Code(err))
	}
	// Piped, or with --json, the timeout is an object on stdout too (with nothing there before).
	if got := out.String(); !strings.Contains(got, `"id": "",`) || !strings.Contains(got, `"status": "timed_out",`) ||
		!strings.Contains(got, `"reason": "no question set arrived within 1ms",`) {
		t.Fatalf("timed out, stdout: %q", got)
	}
	out.Reset()
	st, err := openQuestions(a)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Create(&questions.QuestionSet{Questions: []questions.Question{{Question: "Which language?", Header: "Language", Options: []questions.Option{{Label: "Go"}, {Label: "Rust"}}}}}, questions.CreateOptions{Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if err := runQuestionsWait(ctx, a, &waitOptions{timeout: "30s", asJSON: true}); err != nil ||
		!strings.Contains(out.String(), `"id": "`+s.ID+`"`) || !strings.Contains(out.String(), "Which language?") {
		t.Fatalf("wait --json: %v %s", err, out.String())
	}
}

// syncBuffer is a buffer written by a server's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
