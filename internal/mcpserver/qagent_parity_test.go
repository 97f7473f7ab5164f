package mcpserver_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// TestQAgentBackendParity: the q-developer-agent tool gives the same result on the chat backend
// (the default; the fake as kiro-cli's chat) and on the ACP backend (agent.backend acp; the fake's
// acp mode) for each scenario: what both backends can know is said the same way.
func TestQAgentBackendParity(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name  string
		env   []string
		tools func(string) string // the variable that makes the agent use a shell tool
	}{
		{"chat", nil, func(string) string { return "FAKEQ_TOOLS=shell" }},
		{"acp", []string{"QKIT_AGENT_BACKEND=acp"}, func(string) string { return "FAKEQ_ACP_TOOLS=shell:echo hi" }},
	}
	for _, c := range []struct {
		name    string
		env     []string      // the agent's
		tool    bool          // the agent uses a shell tool
		hangs   bool          // the agent ignores the cancel (its grace is always waited out whole)
		timeout time.Duration // AGENT_TIMEOUT, passed once the partial reply is out (timeoutOnPartial)
		args    map[string]any
		isError bool
		want    []string // in the result's text
		not     string
	}{
		{name: "plain reply", env: []string{`FAKEQ_OUTPUT=The answer.\n`}, args: map[string]any{"prompt": "hi"}, want: []string{"The answer.\n"}},
		{name: "tool use", env: []string{`FAKEQ_OUTPUT=done\n`}, tool: true, args: map[string]any{"prompt": "hi", "yolo-mode": true}, want: []string{"done\n"}},
		{name: "denial", env: []string{`FAKEQ_OUTPUT=done\n`}, tool: true, args: map[string]any{"prompt": "hi"}, isError: true,
			want: []string{"to allow it, run again with trust-tools shell (or yolo-mode true to trust every tool)"}},
		{name: "cap", env: []string{"FAKEQ_LINES=200", "AGENT_MAX_RESPONSE_SIZE=100"}, args: map[string]any{"prompt": "hi"},
			want: []string{"line 1\n", "[RESPONSE TRUNCATED"}, not: "line 200"},
		{name: "timeout", env: []string{"FAKEQ_OUTPUT=partial answer\\n", "FAKEQ_SLEEP=60s", "FAKEQ_ACP_BAD=hang", "AGENT_TIMEOUT=3"},
			hangs: true, timeout: 3 * time.Second, args: map[string]any{"prompt": "hi"}, want: []string{"partial answer", "[TIMED OUT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			got := map[string]string{}
			// (Cleanup runs once both backends' subtests have ended. With a tool the fakes differ:
			// the chat one says a line before it, the ACP one not.)
			t.Cleanup(func() {
				if c.name == "plain reply" && !t.Failed() && got["chat"] != got["acp"] {
					t.Errorf("chat %q, acp %q", got["chat"], got["acp"])
				}
			})
			for _, b := range backends {
				t.Run(b.name, func(t *testing.T) {
					t.Parallel()
					env := append(append([]string{}, b.env...), c.env...)
					if c.tool {
						env = append(env, b.tools(b.name))
					}
					d := parityDeps(t, env)
					if c.hangs {
						mcpserver.SetAgentGrace(d, 200*time.Millisecond)
					}
					var opts *mcp.ClientOptions
					if c.timeout > 0 {
						opts = timeoutOnPartial(t, d, c.timeout, "partial answer")
					}
					cs := mcptest.ConnectWith(t, d, opts)
					res := callWithProgress(t, cs, c.args)
					text := mcptest.Text(res)
					if res.IsError != c.isError {
						t.Fatalf("%s: isError %v, want %v: %q", b.name, res.IsError, c.isError, text)
					}
					for _, w := range c.want {
						if !strings.Contains(text, w) {
							t.Fatalf("%s: %q lacks %q", b.name, text, w)
						}
					}
					if c.not != "" && strings.Contains(text, c.not) {
						t.Fatalf("%s: %q has %q", b.name, text, c.not)
					}
					mu.Lock()
					got[b.name] = text
					mu.Unlock()
				})
			}
		})
	}
}

// parityServer is a server whose agent is the fake as kiro-cli; env holds the agent's variables
// and the server's settings (QKIT_*, AGENT_*).
func parityServer(t *testing.T, env []string) (*mcp.ClientSession, func() []string) {
	t.Helper()
	return mcptest.ConnectWith(t, parityDeps(t, env), nil), nil
}

// parityDeps is parityServer's server before it is connected.
func parityDeps(t *testing.T, env []string) *mcpserver.Deps {
	t.Helper()
	vars := map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent"}
	var fake []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "QKIT_") || strings.HasPrefix(kv, "AGENT_") {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
			continue
		}
		fake = append(fake, kv)
	}
	vars["QKIT_AGENT_COMMAND"] = newFakeAgent(t, "kiro", fake...).Command
	return &mcpserver.Deps{App: mcptest.NewApp(t, vars), ProgressEvery: time.Hour}
}
