// Package mcptest connects the MCP SDK's own client to qkit's server in memory, for tool tests.
//
//	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent"})
//	cs := mcptest.Connect(t, &mcpserver.Deps{App: a})
//	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{}})
//
// Both ends are closed when the test ends.
package mcptest

import (
	"bytes"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/mcpserver"
)

// NewApp returns an App whose configuration comes only from env (plus QKIT_HOME in a temporary
// folder, unless env sets it), with the logger writing to the test log at debug level.
func NewApp(t testing.TB, env map[string]string) *app.App {
	t.Helper()
	vars := map[string]string{"QKIT_HOME": filepath.Join(t.TempDir(), "qkit")}
	maps.Copy(vars, env)
	streams, _, _, _ := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	err := a.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}, "debug")
	if err != nil {
		t.Fatalf("mcptest: loading config: %v", err)
	}
	logs := &logBuffer{}
	a.Logger = app.NewLogger(logs, slog.LevelDebug)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return a
}

// Connect starts mcpserver.NewServer(d) and returns a client session connected to it in memory.
func Connect(t testing.TB, d *mcpserver.Deps) *mcp.ClientSession {
	t.Helper()
	return ConnectWith(t, d, nil)
}

// ConnectWith is Connect with client options (e.g. a ProgressNotificationHandler or an
// ElicitationHandler with its capability).
func ConnectWith(t testing.TB, d *mcpserver.Deps, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return ConnectVersion(t, d, opts, "")
}

// ConnectVersion is ConnectWith on the given protocol version ("": the SDK's latest), which the
// server must agree to.
func ConnectVersion(t testing.TB, d *mcpserver.Deps, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(d).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("mcptest: server connect: %v", err)
	}
	var sopts *mcp.ClientSessionOptions
	if version != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest", Version: "test"}, opts).Connect(t.Context(), ct, sopts)
	if err != nil {
		t.Fatalf("mcptest: client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("mcptest: negotiated %s, want %s", got, version)
	}
	return cs
}

// Text joins the text contents of a result but q-developer-agent's session block (Session gives
// that one).
func Text(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && !strings.HasPrefix(tc.Text, mcpserver.QAgentSessionPrefix) {
			s += tc.Text
		}
	}
	return s
}

// Session is the text of q-developer-agent's session block, "" when the result has none.
func Session(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.HasPrefix(tc.Text, mcpserver.QAgentSessionPrefix) {
			return tc.Text
		}
	}
	return ""
}

// logBuffer collects the server's log; it is printed when the test fails. (Logging straight to
// t.Log would panic when a server goroutine logs after the test ended.)
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
