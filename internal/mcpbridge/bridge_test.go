package mcpbridge

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary be a stdio MCP server (MCPBRIDGE_TEST_SERVER=1) with one tool,
// "echo", which also writes the server's pid to $MCPBRIDGE_PID.
func TestMain(m *testing.M) {
	if os.Getenv("MCPBRIDGE_TEST_SERVER") == "1" {
		srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text + " in " + filepath.Base(wd)}}}, nil, nil
		})
		_ = os.WriteFile(os.Getenv("MCPBRIDGE_PID"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		_ = srv.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type withHeader struct{ name, value string }

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.name != "" {
		r.Header.Set(h.name, h.value)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(ctx context.Context, url, header, value string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: withHeader{header, value}}}, nil)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestBridge starts a stdio server for a session, calls its tool over the loopback endpoint with
// the session's secret, is refused without it, and stops the server when the session closes.
func TestBridge(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := New(nil)
	defer b.Close()
	s, err := b.Open(ctx, dir, []Server{
		{Name: "notes", Command: os.Args[0], Env: []string{"MCPBRIDGE_TEST_SERVER=1", "MCPBRIDGE_PID=" + pidFile}},
		{Name: "broken", Command: filepath.Join(dir, "no-such-server")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Endpoints) != 1 || s.Endpoints[0].Name != "notes" || !strings.HasPrefix(s.Endpoints[0].URL, "http://127.0.0.1:") {
		t.Fatalf("endpoints %+v", s.Endpoints)
	}
	ep := s.Endpoints[0]
	cs, err := connect(ctx, ep.URL, ep.Header[0], ep.Header[1])
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; txt != "echo: hi in "+filepath.Base(dir) {
		t.Fatalf("tool said %q", txt)
	}
	cs.Close()
	for _, h := range [][2]string{{"", ""}, {"Authorization", "Bearer wrong"}, {"Authorization", ep.Header[1] + "x"}} {
		if _, err := connect(ctx, ep.URL, h[0], h[1]); err == nil {
			t.Fatalf("connected with header %q", h)
		}
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(data))
	if pid == 0 || !alive(pid) {
		t.Fatalf("server pid %q not running", data)
	}
	s.Close()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server outlived its session")
		}
	}
	if _, err := connect(ctx, ep.URL, ep.Header[0], ep.Header[1]); err == nil {
		t.Fatal("the endpoint outlived its session")
	}
	var empty *Session
	if empty, err = b.Open(ctx, dir, nil); err != nil || len(empty.Endpoints) != 0 {
		t.Fatalf("no servers: %+v %v", empty, err)
	}
	empty.Close()
}
