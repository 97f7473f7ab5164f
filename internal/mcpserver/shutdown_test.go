package mcpserver_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// TestServeStopsRunningAgents ends the server (as SIGTERM does, through its context) while a
// q-developer-agent call runs: Serve returns only once the agent's process group is gone.
func TestServeStopsRunningAgents(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKEQ_AS_Q", "1")
	t.Setenv("FAKEQ_GRANDCHILD", pidFile)
	t.Setenv("FAKEQ_SLEEP", "60s")
	t.Setenv("FAKEQ_OUTPUT", "x")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": os.Args[0]})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- mcpserver.Serve(ctx, &mcpserver.Deps{App: a}, mcpserver.StdioTransport(inR, outW)) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	}()
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the pid file is written before the sleeper is waited on
	cancel()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	// The group was signalled before Serve returned; the grandchild may still be exiting.
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(data))
	for deadline := time.Now().Add(10 * time.Second); ; {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat[bytes.LastIndexByte(stat, ')'):]), ") Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running after Serve returned", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	inW.Close()
	outR.Close()
}
