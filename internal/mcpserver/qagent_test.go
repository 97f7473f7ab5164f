package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// TestMain lets the test binary act as the agent (fakeqtest.Use, newFakeAgent).
func TestMain(m *testing.M) {
	if os.Getenv("FAKEQ_AS_Q") != "1" { // the tests, not a run as the agent
		fakeqtest.ParallelWaits()
	}
	fakeqtest.Main(m)
}

// qServer connects to a server whose agent.command is the fake q, with the tool enabled unless
// env says otherwise. fakeEnv configures the fake (it inherits the test's environment).
func qServer(t *testing.T, env map[string]string, fakeEnv ...string) (*mcp.ClientSession, *mcpserver.Deps) {
	t.Helper()
	d := qDeps(t, env, fakeEnv...)
	return mcptest.Connect(t, d), d
}

// qDeps is qServer's server before it is connected.
func qDeps(t *testing.T, env map[string]string, fakeEnv ...string) *mcpserver.Deps {
	t.Helper()
	vars := map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": newFakeAgent(t, "", fakeEnv...).Command}
	for k, v := range env {
		vars[k] = v
	}
	return &mcpserver.Deps{App: mcptest.NewApp(t, vars), ProgressEvery: 50 * time.Millisecond}
}

// timeoutOnPartial makes d's agent runs count their timeout on a clock that moves by timeout once
// the client is told (the call's first progress notification, which goes out at once) that the
// agent printed want: the run times out with its partial reply out, however slow the machine,
// and waits for no real timeout. The call must carry a progress token (callWithProgress); the
// client options returned watch its notifications.
func timeoutOnPartial(t *testing.T, d *mcpserver.Deps, timeout time.Duration, want string) *mcp.ClientOptions {
	t.Helper()
	clock := fakeqtest.NewClock()
	mcpserver.SetAgentClock(d, clock)
	var once sync.Once
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		if strings.HasSuffix(req.Params.Message, ": "+want) {
			once.Do(func() {
				if n := clock.Advance(timeout); n != 1 {
					t.Errorf("moving the clock by the timeout ended %d runs, not one", n)
				}
			})
		}
	}}
}

func call(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "q-developer-agent", Arguments: args})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

func listed(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func TestQAgentDisabled(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{{"ENABLE_ADDITIONAL_TOOLS": ""}, {"ENABLE_ADDITIONAL_TOOLS": "other-tool"}} {
		rec := filepath.Join(t.TempDir(), "argv")
		cs, _ := qServer(t, env, "FAKEQ_RECORD="+rec)
		if _, ok := listed(t, cs)["q-developer-agent"]; ok {
			t.Fatal("disabled tool is listed")
		}
		res := call(t, cs, map[string]any{"prompt": "hi"})
		text := mcptest.Text(res)
		if !res.IsError || !strings.Contains(text, "q-developer-agent tool is not enabled. Set ENABLE_ADDITIONAL_TOOLS environment variable to include 'q-developer-agent'") ||
			!strings.Contains(text, "qkit settings set tools.enabled q-developer-agent") {
			t.Fatalf("disabled call: %+v %q", res, text)
		}
		if _, err := os.Stat(rec); err == nil {
			t.Fatal("the agent ran although the tool is disabled")
		}
	}
}

func TestQAgentEnabledSpellings(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"ENABLE_ADDITIONAL_TOOLS": " Q_Developer_Agent , x"},
		{"ENABLE_ADDITIONAL_TOOLS": "all"},
		{"ENABLE_ADDITIONAL_TOOLS": "", "QKIT_TOOLS_ENABLED": "q-developer-agent"},
	} {
		cs, _ := qServer(t, env)
		if _, ok := listed(t, cs)["q-developer-agent"]; !ok {
			t.Errorf("%v: tool not listed", env)
		}
	}
}

func TestQAgentDefinition(t *testing.T) {
	t.Parallel()
	cs, _ := qServer(t, map[string]string{"QKIT_AGENT_MODELS": "claude-3.5-sonnet,claude-3.7-sonnet,claude-sonnet-4"})
	tool := listed(t, cs)["q-developer-agent"]
	if tool == nil || !strings.Contains(tool.Description, "q chat --no-interactive") {
		t.Fatalf("tool %+v", tool)
	}
	schema, _ := json.Marshal(tool.InputSchema)
	var s struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Required, []string{"prompt"}) {
		t.Errorf("required %v", s.Required)
	}
	for _, p := range []string{"prompt", "resume", "agent", "override-model", "yolo-mode", "trust-tools", "verbose"} {
		if s.Properties[p] == nil || s.Properties[p]["description"] == "" {
			t.Errorf("parameter %s missing or undocumented: %v", p, s.Properties[p])
		}
	}
	m := s.Properties["override-model"]
	if !reflect.DeepEqual(m["enum"], []any{"claude-3.5-sonnet", "claude-3.7-sonnet", "claude-sonnet-4"}) ||
		!strings.Contains(m["description"].(string), "claude-sonnet-4 (default)") {
		t.Errorf("override-model %v", m)
	}
	if a := tool.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("annotations %+v", a)
	}
}

// With agent.models set empty, override-model takes any model: no enum in the schema or its
// validation, and the description says so.
// agent.models is empty by default: override-model keeps its documented default and takes
// any name (the agent itself refuses one it does not know).
func TestQAgentAnyModelWhenModelsEmpty(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	cs, _ := qServer(t, nil, "FAKEQ_RECORD="+rec, "FAKEQ_OUTPUT=ok")
	m := listed(t, cs)["q-developer-agent"].InputSchema.(map[string]any)["properties"].(map[string]any)["override-model"].(map[string]any)
	if m["enum"] != nil || !strings.Contains(m["description"].(string), "any model the agent knows; claude-sonnet-4 (default)") {
		t.Errorf("override-model %v", m)
	}
	if res := call(t, cs, map[string]any{"prompt": "hi", "override-model": "gpt-9"}); res.IsError {
		t.Fatalf("result %q", mcptest.Text(res))
	}
	data, _ := os.ReadFile(rec)
	if !strings.Contains(string(data), `"--model","gpt-9"`) {
		t.Fatalf("argv %s", data)
	}
}

func TestQAgentMapsParameters(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	cs, _ := qServer(t, nil, "FAKEQ_RECORD="+rec, `FAKEQ_OUTPUT=the reply\n`, "FAKEQ_ANSI=1")
	res := call(t, cs, map[string]any{
		"prompt": "@main.go explain", "resume": true, "agent": "dev", "override-model": "claude-3.7-sonnet",
		"yolo-mode": true, "trust-tools": "fs_read,fs_write", "verbose": true,
	})
	if res.IsError || mcptest.Text(res) != "the reply\n" || len(res.Content) != 2 {
		t.Fatalf("result %+v %q", res, mcptest.Text(res))
	}
	// The session's id is in _meta and, for the model (clients show it the content, not _meta),
	// in the last block.
	if id, _ := res.Meta["qkit/session_id"].(string); id == "" || !strings.HasPrefix(mcptest.Session(res), mcpserver.QAgentSessionPrefix+id+": ") {
		t.Errorf("session block %q, _meta %v", mcptest.Session(res), res.Meta)
	}
	data, _ := os.ReadFile(rec)
	var argv []string
	_ = json.Unmarshal(bytes.TrimSpace(data), &argv)
	want := []string{"chat", "--no-interactive", "--resume", "--agent", "dev", "--model", "claude-3.7-sonnet",
		"--trust-all-tools", "--trust-tools=fs_read,fs_write", "--verbose", "@main.go explain"}
	if !reflect.DeepEqual(argv, want) {
		t.Fatalf("argv %q\nwant %q", argv, want)
	}
	// Without options only the prompt follows --no-interactive, and no other q command runs first
	// (no installation or login check).
	os.Remove(rec)
	call(t, cs, map[string]any{"prompt": "hi"})
	data, _ = os.ReadFile(rec)
	if string(bytes.TrimSpace(data)) != `["chat","--no-interactive","hi"]` {
		t.Fatalf("record %s", data)
	}
}

func TestQAgentBadInput(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	cs, _ := qServer(t, map[string]string{"QKIT_AGENT_MODELS": "claude-sonnet-4"}, "FAKEQ_RECORD="+rec)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"prompt": ""}, "prompt is a required parameter and cannot be empty"},
		{map[string]any{"prompt": "  \n"}, "prompt is a required parameter and cannot be empty"},
		{map[string]any{}, "prompt"},
		{map[string]any{"prompt": "x", "override-model": "gpt-5"}, "override-model"},
		{map[string]any{"prompt": "x", "resume": "yes"}, "resume"},
	} {
		res := call(t, cs, c.args)
		if !res.IsError || !strings.Contains(mcptest.Text(res), c.want) {
			t.Errorf("%v: %+v %q", c.args, res, mcptest.Text(res))
		}
	}
	if _, err := os.Stat(rec); err == nil {
		t.Fatal("the agent ran for bad input")
	}
}

func TestQAgentFailures(t *testing.T) {
	t.Parallel()
	t.Run("exit status", func(t *testing.T) {
		t.Parallel()
		cs, _ := qServer(t, nil, "FAKEQ_EXIT=1", "FAKEQ_STDERR=error: dispatch failure")
		res := call(t, cs, map[string]any{"prompt": "hi"})
		if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "exited with status 1: error: dispatch failure") {
			t.Fatalf("%+v %q", res, text)
		}
	})
	t.Run("approval", func(t *testing.T) {
		t.Parallel()
		cs, _ := qServer(t, nil, "FAKEQ_APPROVAL_TOOL=fs_write")
		res := call(t, cs, map[string]any{"prompt": "hi"})
		if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "yolo-mode") {
			t.Fatalf("%+v %q", res, text)
		}
		if res := call(t, cs, map[string]any{"prompt": "hi", "trust-tools": "fs_write"}); res.IsError {
			t.Fatalf("trusted tool still refused: %q", mcptest.Text(res))
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		t.Parallel()
		cs, _ := qServer(t, map[string]string{"QKIT_AGENT_COMMAND": "qkit-no-such-agent"})
		res := call(t, cs, map[string]any{"prompt": "hi"})
		if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "agent.command") {
			t.Fatalf("%+v %q", res, text)
		}
	})
}

func TestQAgentLimits(t *testing.T) {
	t.Parallel()
	t.Run("truncation", func(t *testing.T) {
		t.Parallel()
		cs, _ := qServer(t, map[string]string{"AGENT_MAX_RESPONSE_SIZE": "4096"}, "FAKEQ_BYTES=10000")
		res := call(t, cs, map[string]any{"prompt": "hi"})
		text := mcptest.Text(res)
		if res.IsError || !strings.HasSuffix(text, "[RESPONSE TRUNCATED: Output exceeded 4.0KB limit. Original: 10000, Truncated: 4031]") {
			t.Fatalf("%+v %q", res, text[max(0, len(text)-200):])
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		d := qDeps(t, map[string]string{"AGENT_TIMEOUT": "5"}, `FAKEQ_OUTPUT=partial\n`, "FAKEQ_SLEEP=60s")
		cs := mcptest.ConnectWith(t, d, timeoutOnPartial(t, d, 5*time.Second, "partial"))
		res := callWithProgress(t, cs, map[string]any{"prompt": "hi"})
		text := mcptest.Text(res)
		if res.IsError || !strings.HasPrefix(text, "partial\n") || !strings.Contains(text, "timeout of 5 seconds") {
			t.Fatalf("%+v %q", res, text)
		}
	})
}

func TestQAgentProgress(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	agent := newFakeAgent(t, "", "FAKEQ_OUTPUT=done", "FAKEQ_SLEEP=500ms")
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	cs := mcptest.ConnectWith(t, &mcpserver.Deps{App: a, ProgressEvery: 50 * time.Millisecond}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "tok" && strings.Contains(req.Params.Message, "has been running for") {
				n.Add(1)
			}
		},
	})
	params := &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	// The notifications went out before the result but may still be on their way to the handler.
	if len(progressUntil(func() []string { return make([]string, n.Load()) }, atLeastOne)) == 0 {
		t.Fatal("no progress notification while the agent ran")
	}
}

func TestQAgentCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cs, _ := qServer(t, nil, "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_OUTPUT=x", "FAKEQ_SLEEP=60s")
	ctx, cancel := context.WithCancel(t.Context())
	go func() { // cancel once the fake q has written its grandchild's pid
		defer cancel()
		for ctx.Err() == nil {
			if data, _ := os.ReadFile(pidFile); len(data) > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "q-developer-agent", Arguments: map[string]any{"prompt": "hi"}})
	if err == nil {
		t.Fatal("cancelled call returned no error")
	}
	waitGone(t, pidFile)
}

func TestQAgentHelp(t *testing.T) {
	t.Parallel()
	cs, _ := qServer(t, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{"tool_name": "q-developer-agent"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	text := mcptest.Text(res)
	for _, w := range []string{"Examples:", "Common patterns:", "Troubleshooting:", "State: enabled (optional)", "q login"} {
		if !strings.Contains(text, w) {
			t.Errorf("help lacks %q", w)
		}
	}
}
