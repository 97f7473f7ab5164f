package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServeWithSDKClient drives `qkit mcp serve` as a child process with the Go SDK's own
// client, against the fake q, and checks that stdout carried nothing but JSON-RPC.
func TestMCPServeWithSDKClient(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cmd := exec.Command("qkit", "mcp", "serve")
	cmd.Env = append(cmd.Environ(),
		"QKIT_HOME="+filepath.Join(home, ".qkit"), "HOME="+home,
		"ENABLE_ADDITIONAL_TOOLS=q-developer-agent", "FAKEQ_OUTPUT=reply from q", "FAKEQ_ANSI=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wire := &syncBuffer{}
	transport := &mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(stdout, wire)), Writer: stdin}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil).Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, stderr.String())
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "qkit" || info.Version == "" {
		t.Fatalf("server info %+v", info)
	}
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "q-developer-agent") {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "reply from q" {
		t.Fatalf("reply %q", text)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": " "}})
	if err != nil || !res.IsError {
		t.Fatalf("empty prompt: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v (stderr %s)", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(wire.String()), "\n") {
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
