package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/proctest"
)

// TestServersStopTheAgent: however a stdio server is stopped while q is running (SIGTERM from the
// client or a supervisor, or a client that dies and closes qkit's stdin and stdout), `mcp serve` and
// `acp serve` exit cleanly and promptly (never killed by SIGPIPE on the next write), and q's whole
// process group, grandchild included, is stopped with them, on both backends. The agent ignores
// SIGTERM (FAKEQ_DEAF): SIGTERM is still the first thing it gets (not its stdin closed and a
// wait), and it is gone before the server exits.
func TestServersStopTheAgent(t *testing.T) {
	t.Parallel()
	for _, server := range []string{"mcp", "acp"} {
		for _, backend := range []string{"chat", "acp"} {
			for _, how := range []string{"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "client gone"} {
				t.Run(server+"/"+backend+"/"+how, func(t *testing.T) { serverStop(t, server, backend, how) })
			}
		}
	}
}

func serverStop(t *testing.T, server, backend, how string) {
	home := t.TempDir()
	pidFile := filepath.Join(home, "grandchild.pid")
	deafFile := filepath.Join(home, "agent.txt")
	args := []string{server, "serve"}
	if server == "mcp" {
		args = append(args, "--eof-grace", "200ms") // a vanished client's calls get 200 ms, not 10 s
	}
	cmd := exec.Command("qkit", args...)
	cmd.Env = append(cmd.Environ(),
		"QKIT_HOME="+filepath.Join(home, ".qkit"), "HOME="+home, "QKIT_ACP_ENABLED=true",
		"ENABLE_ADDITIONAL_TOOLS=q-developer-agent",
		"FAKEQ_OUTPUT=partial", "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_DEAF="+deafFile,
		"QKIT_AGENT_BACKEND="+backend, "FAKEQ_FLAVOUR=kiro")
	if backend == "chat" {
		cmd.Env = append(cmd.Env, "FAKEQ_SLEEP=60s")
	} else {
		cmd.Env = append(cmd.Env, "FAKEQ_LINES=100", "FAKEQ_INTERVAL=1s")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	if server == "mcp" {
		startMCPAgentCall(t, stdin, stdout)
	} else {
		startACPPrompt(t, stdin, stdout, home)
	}
	pid := waitPidFile(t, pidFile)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // the turn has begun
		if data, _ := os.ReadFile(deafFile); strings.HasPrefix(string(data), "pid ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent began no turn")
		}
	}
	signals := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP, "SIGQUIT": syscall.SIGQUIT}
	if sig, ok := signals[how]; ok {
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	} else {
		stdout.Close()
		stdin.Close()
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		// A signal ends the server with 128 + its number (help exit-codes), the client
		// going away with 0; neither is an error to log.
		want := 0
		if sig, ok := signals[how]; ok {
			want = 128 + int(sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("server exit after %s: %v (code %d), want %d; stderr:\n%s", how, err, code, want, stderr.String())
		}
		if strings.Contains(stderr.String(), "ERROR") {
			t.Errorf("stopping by %s logged an error:\n%s", how, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server kept running after %s", how)
	}
	notes, _ := os.ReadFile(deafFile)
	lines := strings.Split(string(notes), "\n")
	agent, _ := strconv.Atoi(strings.TrimPrefix(lines[0], "pid "))
	if agent <= 0 { // never signal pid 0: that is this test's own process group
		t.Fatalf("the agent noted no turn:\n%s", notes)
	}
	if running, err := proctest.Running(agent); err != nil || running {
		_ = syscall.Kill(agent, syscall.SIGKILL)
		t.Errorf("the agent %d outlived the server (running %v, %v)", agent, running, err)
	}
	if len(lines) < 2 || lines[1] != "SIGTERM" {
		t.Errorf("what the agent got, in order:\n%s\nwant SIGTERM first", notes)
	}
	waitGone(t, pid)
}

func startMCPAgentCall(t *testing.T, stdin io.WriteCloser, stdout io.Reader) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: io.NopCloser(stdout), Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	}()
}

func startACPPrompt(t *testing.T, stdin io.Writer, stdout io.Reader, cwd string) {
	t.Helper()
	conn := acp.NewClientSideConnection(quietEditor{}, stdin, stdout)
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	go func() {
		_, _ = conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
	}()
}

// waitPidFile waits for the fake q's grandchild to start and returns its pid.
func waitPidFile(t *testing.T, pidFile string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(pidFile)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
	}
}

// waitGone fails the test unless process pid exits (or is a zombie) within ten seconds.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if err := proctest.WaitGone(pid, 10*time.Second); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the agent's grandchild outlived the server: %v", err)
	}
}

// quietEditor is an ACP client that accepts updates and refuses everything else.
type quietEditor struct{}

func (quietEditor) SessionUpdate(context.Context, acp.SessionNotification) error { return nil }
func (quietEditor) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}
func (quietEditor) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (quietEditor) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (quietEditor) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (quietEditor) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (quietEditor) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (quietEditor) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (quietEditor) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}
