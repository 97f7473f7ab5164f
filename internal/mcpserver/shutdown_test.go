package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/proctest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// TestServeStopsRunningAgents ends the server (as SIGTERM does, through its context) while a
// q-developer-agent call runs: Serve returns only once the agent's process group is gone.
func TestServeStopsRunningAgents(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	agent := newFakeAgent(t, "", "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_SLEEP=60s", "FAKEQ_OUTPUT=x")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- mcpserver.Serve(ctx, &mcpserver.Deps{App: a}, &mcpserver.Stdio{In: inR, Out: outW}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	}()
	// The condition, not a pause: the fake q writes the grandchild's pid only once the grandchild
	// runs (Start has returned), so both are in the agent's process group when the stop comes.
	waitPID(t, pidFile)
	cancel()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	// The group was signalled before Serve returned; the grandchild may still be exiting.
	waitGone(t, pidFile)
	inW.Close()
	outR.Close()
}

// waitPID waits until the fake q has written its grandchild's pid to pidFile (the file exists
// empty for a moment) and returns it.
func waitPID(t *testing.T, pidFile string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(string(data)); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no grandchild pid in %s", pidFile)
		}
	}
}

// waitGone fails t unless the process whose pid is in pidFile is gone (or a zombie) soon.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	pid := waitPID(t, pidFile)
	if err := proctest.WaitGone(pid, 10*time.Second); err != nil {
		t.Fatalf("grandchild still running after Serve returned: %v", err)
	}
}

// pipeServer serves d over a pair of pipes with the given end-of-input grace and connects the SDK's
// client to it. closeInput closes the server's stdin as an MCP client does when it shuts down;
// served reports Serve's return.
func pipeServer(t *testing.T, d *mcpserver.Deps, grace time.Duration) (cs *mcp.ClientSession, closeInput func(), served <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(t.Context(), d, &mcpserver.Stdio{In: inR, Out: outW, EOFGrace: grace, Logger: d.App.Logger})
		outW.Close() // the client's pending calls see the end of the connection
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() { inW.Close() }, done
}

func waitServed(t *testing.T, served <-chan error) {
	t.Helper()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after the end of input")
	}
}

// TestEndOfInputCancelsRunningAgent closes stdin while a q-developer-agent call runs (how MCP
// clients shut a stdio server down): after the grace the call is cancelled, Serve returns, and
// the agent's process group is gone, instead of the server running until AGENT_TIMEOUT.
func TestEndOfInputCancelsRunningAgent(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	agent := newFakeAgent(t, "", "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_SLEEP=60s")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	logs := &syncBuffer{}
	a.Logger = app.NewLogger(logs, slog.LevelWarn)
	cs, closeInput, served := pipeServer(t, &mcpserver.Deps{App: a}, 50*time.Millisecond)
	call := askAsync(context.Background(), cs, &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	waitPID(t, pidFile) // the agent and its grandchild run (see TestServeStopsRunningAgents)
	closeInput()
	waitServed(t, served)
	waitGone(t, pidFile)
	if r := <-call; r.err == nil {
		t.Fatalf("the cancelled call was answered after the end of input: %+v", r.res)
	}
	if !strings.Contains(logs.String(), "the client closed stdin; cancelling the calls still running") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
}

// TestEndOfInputDetachesQuestions closes stdin while ask_user_questions waits for the user: Serve
// returns instead of waiting up to questions.timeout, and the question set is left detached (still
// answerable, for a repeated call), not abandoned.
func TestEndOfInputDetachesQuestions(t *testing.T) {
	a := mcptest.NewApp(t, nil)
	st, err := dirstore.New(filepath.Join(a.Config.Paths.State, "questions"), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cs, closeInput, served := pipeServer(t, &mcpserver.Deps{App: a}, 50*time.Millisecond)
	_ = askAsync(context.Background(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	closeInput()
	waitServed(t, served)
	got, err := st.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Status != questions.Detached {
		t.Fatalf("status after the end of input: %+v", got.Status)
	}
}

// TestEndOfInputAnswersCallsWithinGrace closes stdin right after a call that takes a moment (as
// `printf ... | qkit mcp serve` does): the call is still answered.
func TestEndOfInputAnswersCallsWithinGrace(t *testing.T) {
	t.Parallel()
	started := filepath.Join(t.TempDir(), "argv")
	agent := newFakeAgent(t, "", "FAKEQ_RECORD="+started, "FAKEQ_OUTPUT=late reply", "FAKEQ_SLEEP=300ms")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	cs, closeInput, served := pipeServer(t, &mcpserver.Deps{App: a}, time.Minute)
	call := askAsync(context.Background(), cs, &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) { // q is running
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
	}
	closeInput()
	r := <-call
	if r.err != nil || r.res.IsError || mcptest.Text(r.res) != "late reply" {
		t.Fatalf("call: %v %+v", r.err, r.res)
	}
	waitServed(t, served)
}

// TestCancelledCallGetsNoResponse: the SDK's client cancels a q-developer-agent call (its context
// ends: notifications/cancelled goes out); the agent's process group is stopped, and, as MCP says
// of a cancelled request, no response for that call's id ever reaches the client (read on the
// wire, under the SDK), while the session goes on.
func TestCancelledCallGetsNoResponse(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	agent := newFakeAgent(t, "", "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_SLEEP=60s")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- mcpserver.Serve(t.Context(), &mcpserver.Deps{App: a}, &mcpserver.Stdio{In: inR, Out: outW, EOFGrace: time.Minute})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	var sent, received syncBuffer // the wire, both ways
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(outR, &received)), Writer: teeWriteCloser{inW, &sent}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	call := askAsync(ctx, cs, &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	waitPID(t, pidFile)
	cancel()
	if r := <-call; r.err == nil {
		t.Fatalf("the cancelled call returned a result: %+v", r.res)
	}
	waitGone(t, pidFile) // the server cancelled the run
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Fatalf("the session did not go on: %v", err)
	}
	inW.Close()
	waitServed(t, served) // every request counts as answered, the withdrawn one too

	var callID, cancelledID json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(sent.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("sent %q: %v", line, err)
		}
		switch m.Method {
		case "tools/call":
			callID = m.ID
		case "notifications/cancelled":
			cancelledID = m.Params.RequestID
		}
	}
	if callID == nil || string(cancelledID) != string(callID) {
		t.Fatalf("the client sent tools/call %s and cancelled %s:\n%s", callID, cancelledID, sent.String())
	}
	answered := 0
	for _, line := range strings.Split(strings.TrimSpace(received.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("received %q: %v", line, err)
		}
		if m.Method == "" && m.ID != nil {
			answered++
			if string(m.ID) == string(callID) {
				t.Errorf("the cancelled call %s was answered: %s", callID, line)
			}
		}
	}
	if answered != 2 { // initialize and ping
		t.Errorf("%d responses, want initialize's and ping's:\n%s", answered, received.String())
	}
}

// teeWriteCloser copies what is written to a pipe into a record.
type teeWriteCloser struct {
	w   io.WriteCloser
	rec io.Writer
}

func (t teeWriteCloser) Write(p []byte) (int, error) {
	_, _ = t.rec.Write(p)
	return t.w.Write(p)
}

func (t teeWriteCloser) Close() error { return t.w.Close() }
