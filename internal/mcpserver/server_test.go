package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

func TestServerInfoAndHelpTool(t *testing.T) {
	t.Parallel()
	a := mcptest.NewApp(t, nil)
	cs := mcptest.Connect(t, &mcpserver.Deps{App: a})
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "qkit" || init.ServerInfo.Version != "test" || !strings.Contains(init.Instructions, "qkit_help") {
		t.Fatalf("initialize result %+v", init)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{"tool_name": "qkit_help"}})
	if err != nil || res.IsError {
		t.Fatalf("qkit_help: %v %+v", err, res)
	}
	if text := mcptest.Text(res); !strings.Contains(text, "# qkit_help") || !strings.Contains(text, "Troubleshooting") {
		t.Fatalf("help text %q", text)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{"tool_name": "nope"}})
	if err != nil || !res.IsError {
		t.Fatalf("unknown tool name should be a tool error: %v %+v", err, res)
	}
}

func TestEveryToolHasHelpAndRegistersItsName(t *testing.T) {
	t.Parallel()
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "all"})
	cs := mcptest.Connect(t, &mcpserver.Deps{App: a})
	listed := map[string]bool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	for _, tool := range mcpserver.Registry() {
		if !listed[tool.Name] {
			t.Errorf("%s is in the registry but its Add registered another name", tool.Name)
		}
		if strings.TrimSpace(tool.Help) == "" {
			t.Errorf("%s has no extended help", tool.Name)
		}
	}
	if len(listed) != len(mcpserver.Registry()) {
		t.Errorf("listed %v, registry has %d tools", listed, len(mcpserver.Registry()))
	}
}

// TestMalformedInput sends lines that are not JSON-RPC between good requests: each gets an error
// response and the session carries on.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	a := mcptest.NewApp(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(t.Context(), &mcpserver.Deps{App: a}, &mcpserver.Stdio{In: inR, Out: outW})
	}()
	responses := bufio.NewScanner(outR)
	send := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !responses.Scan() {
			t.Fatalf("no response to %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal(responses.Bytes(), &m); err != nil {
			t.Fatalf("response %q is not JSON: %v", responses.Text(), err)
		}
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	init := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init["result"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	if m := send(`{not json`); code(m) != -32700 {
		t.Fatalf("garbage: %v", m)
	}
	if m := send(`{"id":7,"method":"x"}`); code(m) != -32600 || m["id"] != float64(7) {
		t.Fatalf("no version tag: %v", m)
	}
	if m := send(`[]`); code(m) != -32600 {
		t.Fatalf("empty batch: %v", m)
	}
	if m := send(`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`); code(m) != -32600 {
		t.Fatalf("batch: %v", m)
	}
	if m := send(`{"jsonrpc":"2.0","id":5}`); code(m) != -32600 || m["id"] != float64(5) {
		t.Fatalf("neither request nor response: %v", m)
	}
	if m := send(`{"jsonrpc":"2.0","id":6,"method":""}`); code(m) != -32600 {
		t.Fatalf("empty method: %v", m)
	}
	if m := send(`42`); code(m) != -32600 {
		t.Fatalf("number: %v", m)
	}
	if m := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); m["result"] == nil {
		t.Fatalf("tools/list after garbage: %v", m)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestRequestWithoutID: a request sent without an id is not run (the log names it), one with
// "id":null is answered -32600, and the session carries on; notifications still pass.
func TestRequestWithoutID(t *testing.T) {
	t.Parallel()
	a := mcptest.NewApp(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var log syncLog
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(t.Context(), &mcpserver.Deps{App: a}, &mcpserver.Stdio{In: inR, Out: outW, EOFGrace: time.Minute, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	}()
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"qkit_help","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		} {
			_, _ = io.WriteString(inW, l+"\n")
		}
		inW.Close()
	}()
	responses := bufio.NewScanner(outR)
	responses.Buffer(nil, 1<<20)
	// The pipe answers the null id as it reads it, before the SDK sees the ping, and maybe
	// before the SDK answers initialize: read until both requests are answered.
	var got []string
	pong := `{"jsonrpc":"2.0","id":2,"result":{}}`
	for responses.Scan() {
		got = append(got, responses.Text())
		if slices.Contains(got, pong) && strings.Contains(strings.Join(got, "\n"), `"id":1,"result"`) {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id of \"tools/list\" is null: a request needs a string or number id"}}`
	if len(got) != 3 || !slices.Contains(got, want) {
		t.Fatalf("responses %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if l := log.String(); !strings.Contains(l, "dropped a request sent without an id") || !strings.Contains(l, "method=tools/call") {
		t.Fatalf("log %q: want a line naming tools/call", l)
	}
}

// syncLog is a log the server writes while the test may read it.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOverlongLine sends a line over the 16 MiB limit: it is answered with a parse error, skipped
// to its end, and the session carries on.
func TestOverlongLine(t *testing.T) {
	t.Parallel()
	a := mcptest.NewApp(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(t.Context(), &mcpserver.Deps{App: a}, &mcpserver.Stdio{In: inR, Out: outW, EOFGrace: time.Minute})
	}()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"qkit_help","arguments":{"tool_name":"`)
		_, _ = inW.Write(bytes.Repeat([]byte("x"), mcp.DefaultMaxLineLength))
		_, _ = io.WriteString(inW, `"}}}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
		inW.Close()
	}()
	responses := bufio.NewScanner(outR)
	responses.Buffer(nil, 1<<20)
	var got []string
	for responses.Scan() {
		got = append(got, responses.Text())
		if len(got) == 3 {
			break
		}
	}
	all := strings.Join(got, "\n")
	if len(got) != 3 || !strings.Contains(all, `{"code":-32700,"message":"Parse error: message longer than 16 MiB"}`) ||
		!strings.Contains(all, `"id":2,"result"`) {
		t.Fatalf("responses %.2000q", got)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func FuzzStdioGuard(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte("\x00\xff\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out strings.Builder
		tr := &mcpserver.Stdio{In: strings.NewReader(string(data)), Out: &lockedBuilder{b: &out}}
		// Nothing answers the requests read here, so the end of input must not wait for answers.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		conn, err := tr.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := conn.Read(t.Context()); err != nil { // t.Context: ctx is done already
				break
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("invalid error response %q", line)
			}
		}
	})
}

type lockedBuilder struct{ b *strings.Builder }

func (l *lockedBuilder) Write(p []byte) (int, error) { return l.b.Write(p) }
