package acpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
)

// startGeneric serves the proxy path to the fake as a third-party ACP agent (FAKEQ_ACP_GENERIC),
// given as a command line, as a user sets agent.command to one ("goose acp").
func startGeneric(t *testing.T, change func(*Options)) *harness {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("FAKEQ_ACP_GENERIC", "1")
	return startWith(t, "", func(o *Options) {
		o.Backend = acpclient.BackendAuto
		o.Limits.Command = os.Args[0] + " acp"
		if change != nil {
			change(o)
		}
	})
}

// initialize on the proxy path advertises what the agent behind it takes: its MCP transports and
// its prompt content (qkit takes embedded context for any agent); on the text path nothing of the
// sort.
func TestInitializeAdvertisesTheAgent(t *testing.T) {
	h := startProxy(t, "") // the fake as kiro-cli: HTTP servers, images
	caps := h.initialize().AgentCapabilities
	if !caps.McpCapabilities.Http || caps.McpCapabilities.Sse || !caps.PromptCapabilities.Image || !caps.PromptCapabilities.EmbeddedContext {
		t.Errorf("kiro behind the proxy: %+v", caps)
	}
	g := startGeneric(t, nil)
	caps = g.initialize().AgentCapabilities
	if !caps.McpCapabilities.Http || !caps.McpCapabilities.Sse || !caps.PromptCapabilities.Image || !caps.PromptCapabilities.EmbeddedContext {
		t.Errorf("generic agent behind the proxy: %+v", caps)
	}
	// An image reaches an agent that takes images (the text path refuses it).
	id := g.newSession(t.TempDir())
	if _, err := g.prompt(id, acp.TextBlock("what is this?"), acp.ImageBlock("aGk=", "image/png")); err != nil {
		t.Errorf("an image to an agent that takes images: %v", err)
	}
	text := startWith(t, "", func(o *Options) { o.Backend = acpclient.BackendChat })
	caps = text.initialize().AgentCapabilities
	if caps.McpCapabilities.Http || caps.McpCapabilities.Sse || caps.PromptCapabilities.Image {
		t.Errorf("text path: %+v", caps)
	}
}

// A third-party ACP agent through acp serve: started as given (no kiro flags, no whoami), its own
// auth methods offered and passed on, its login wording, --agent as its mode, and its extension
// methods both ways.
func TestProxyGenericAgent(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "argv")
	ext := filepath.Join(t.TempDir(), "ext")
	t.Setenv("FAKEQ_RECORD", rec)
	t.Setenv("FAKEQ_ACP_EXT", ext)
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	t.Setenv("FAKEQ_ACP_SAY_SETTINGS", "1")
	t.Setenv("FAKEQ_OUTPUT", "hello")
	t.Setenv("KIRO_API_KEY", "")
	h := startGeneric(t, func(o *Options) { o.Agent = "plan" })
	resp := h.initialize()
	if len(resp.AuthMethods) != 1 || resp.AuthMethods[0].Agent == nil || resp.AuthMethods[0].Agent.Id != "generic-login" {
		t.Fatalf("auth methods %+v, want the agent's own", resp.AuthMethods)
	}
	cwd := t.TempDir()
	_, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	wantCode(t, "session/new before the agent's login", err, -32000, "authenticate with one of its methods (generic-login)")
	if strings.Contains(strings.ToLower(err.Error()), "kiro") {
		t.Errorf("kiro's wording for another agent: %v", err)
	}
	if _, err := h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "nope"}); errCode(err) != -32602 {
		t.Errorf("a method the agent does not have: %v", err)
	}
	if _, err := h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "generic-login"}); err != nil {
		t.Fatalf("authenticate with the agent's method: %v", err)
	}
	id := h.newSession(cwd)
	h.mustPrompt(id, "hi", acp.StopReasonEndTurn)
	if got := h.tc.agentText(id); !strings.Contains(got, "[mode plan, model gen-small]") || !strings.Contains(got, "hello") {
		t.Errorf("reply %q: --agent plan did not become the session's mode", got)
	}
	data, _ := os.ReadFile(rec)
	if strings.TrimSpace(string(data)) != `["acp"]` {
		t.Errorf("runs of the agent:\n%s\nwant one, as given (no whoami, no flags)", data)
	}

	// Extension methods pass through: a request answered by the agent, under the agent's session
	// id there and qkit's here; a notification delivered.
	out, err := h.conn.CallExtension(context.Background(), "_generic/echo", map[string]any{"sessionId": string(id), "x": 1})
	if err != nil {
		t.Fatalf("_generic/echo: %v", err)
	}
	var echo struct {
		Echo struct {
			SessionID string `json:"sessionId"`
			X         int    `json:"x"`
		} `json:"echo"`
	}
	if err := json.Unmarshal(out, &echo); err != nil || echo.Echo.X != 1 || echo.Echo.SessionID == string(id) || echo.Echo.SessionID == "" {
		t.Errorf("_generic/echo answered %s (%v): want the params, under the agent's session id", out, err)
	}
	if err := h.conn.NotifyExtension(context.Background(), "_generic/note", map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(ext)
		if strings.Contains(string(data), `_generic/note {"n":2}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the notification did not reach the agent:\n%s", data)
		}
	}
	if _, err := h.conn.CallExtension(context.Background(), "_other/thing", map[string]any{}); errCode(err) != -32601 {
		t.Errorf("an extension the agent does not know: %v", err)
	}
	// The other way: the agent's notification that names no session, and its request, which
	// the editor answers (under qkit's session id).
	out, err = h.conn.CallExtension(context.Background(), "_generic/roundtrip", map[string]any{"sessionId": string(id)})
	if err != nil || !strings.Contains(string(out), `"from":"editor"`) {
		t.Fatalf("_generic/roundtrip: %s %v", out, err)
	}
	h.tc.waitFor(t, "the agent's extension notification", func() bool {
		h.tc.mu.Lock()
		defer h.tc.mu.Unlock()
		return slices.Contains(h.tc.ext, `_generic/pong {"n":3}`)
	})
	h.tc.mu.Lock()
	got := slices.Clone(h.tc.ext)
	h.tc.mu.Unlock()
	if !slices.Contains(got, `_generic/editor {"sessionId":"`+string(id)+`"}`) {
		t.Errorf("the editor got %q: want _generic/editor under its own session id", got)
	}
}

// HandleExtensionMethod records what the editor got and answers a request.
func (c *testClient) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	c.ext = append(c.ext, method+" "+string(params))
	c.mu.Unlock()
	return map[string]any{"from": "editor"}, nil
}

// The model option on the proxy path: an agent that lists no models is offered none of q's
// (only its default); a model the agent refuses is the answer's error, and the session keeps its
// model; one it takes is set.
func TestProxyModelOptionFromTheAgent(t *testing.T) {
	t.Setenv("FAKEQ_ACP_NO_MODELS", "1")
	h := startGeneric(t, nil)
	h.initialize()
	id := h.newSession(t.TempDir())
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if opts := resp.ConfigOptions[0].Select.Options.Ungrouped; opts == nil || len(*opts) != 1 || (*opts)[0].Value != defaultModel {
		t.Errorf("model option of an agent that lists none: %+v, want only %q", opts, defaultModel)
	}
	_, err = h.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "claude-sonnet-4"}})
	wantCode(t, "a model the agent refuses", err, -32601, `did not take model "claude-sonnet-4"`)
	if rec, _ := h.store.Get(context.Background(), string(id)); rec.Model != "" {
		t.Errorf("the refused model was kept: %q", rec.Model)
	}

	t.Setenv("FAKEQ_ACP_NO_MODELS", "")
	t.Setenv("FAKEQ_ACP_SAY_SETTINGS", "1")
	g := startGeneric(t, nil)
	g.initialize()
	id = g.newSession(t.TempDir())
	set, err := g.conn.SetSessionConfigOption(context.Background(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: "gen-large"}})
	if err != nil || set.ConfigOptions[0].Select.CurrentValue != "gen-large" {
		t.Fatalf("set a model the agent has: %+v %v", set, err)
	}
	g.mustPrompt(id, "hi", acp.StopReasonEndTurn)
	if got := g.tc.agentText(id); !strings.Contains(got, "model gen-large") {
		t.Errorf("reply %q: the agent did not get the model", got)
	}
}

// TestInitializeFromWhatWasLearned: what the agent answered to initialize is kept beside the
// learned backend (keyed by its command line and its binary), so a second `acp serve` answers the
// editor's initialize with the agent's capabilities without starting it; a changed binary (an
// upgrade: another size or modification time) is started and learned again.
func TestInitializeFromWhatWasLearned(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(dir, "starts")
	t.Setenv("FAKEQ_RECORD", starts)
	state := t.TempDir()
	initialize := func() acp.AgentCapabilities {
		h := startGeneric(t, func(o *Options) {
			o.Limits.Command = bin + " acp"
			o.Limits.StateDir = state
		})
		defer h.stop()
		return h.initialize().AgentCapabilities
	}
	count := func() int {
		n := 0
		for _, l := range strings.Split(readFileIfAny(starts), "\n") {
			if strings.Contains(l, `"acp"`) {
				n++
			}
		}
		return n
	}
	want := func(caps acp.AgentCapabilities, when string) {
		t.Helper()
		if !caps.McpCapabilities.Http || !caps.McpCapabilities.Sse || !caps.PromptCapabilities.Image {
			t.Errorf("%s: initialize advertised %+v, not the agent's capabilities", when, caps)
		}
	}
	want(initialize(), "first server")
	if n := count(); n != 1 {
		t.Fatalf("the first initialize started the agent %d times, want 1", n)
	}
	want(initialize(), "second server")
	if n := count(); n != 1 {
		t.Fatalf("the second server's initialize started the agent again (%d starts): what was learned was not used", n)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	want(initialize(), "after the binary changed")
	if n := count(); n != 2 {
		t.Fatalf("a changed binary: %d starts, want 2 (learned again)", n)
	}
}

func readFileIfAny(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}
