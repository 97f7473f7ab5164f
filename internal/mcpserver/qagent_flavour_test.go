package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// flavourServer connects to a server whose agent is the fake acting as q or kiro-cli, and
// collects the progress notifications the client receives.
func flavourServer(t *testing.T, flavour string, every time.Duration, fakeEnv ...string) (*mcp.ClientSession, func() []string) {
	t.Helper()
	return agentServer(t, newFakeAgent(t, flavour, fakeEnv...), every)
}

// agentServer is flavourServer with the agent given (for a test that changes its knobs).
func agentServer(t *testing.T, agent *fakeqtest.Agent, every time.Duration) (*mcp.ClientSession, func() []string) {
	t.Helper()
	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent", "QKIT_AGENT_COMMAND": agent.Command})
	var mu sync.Mutex
	var msgs []string
	cs := mcptest.ConnectWith(t, &mcpserver.Deps{App: a, ProgressEvery: every}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			msgs = append(msgs, req.Params.Message)
			mu.Unlock()
		},
	})
	return cs, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), msgs...) }
}

// progressUntil waits until the notifications the client has handled satisfy ok and returns them; on a
// timeout it returns what came. The client SDK hands notifications to their handler on a goroutine of
// its own while the reader delivers responses directly, so a call's result can reach the caller before
// the notifications the server sent ahead of it have been handled.
func progressUntil(msgs func() []string, ok func([]string) bool) []string {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got := msgs(); ok(got) || time.Now().After(deadline) {
			return got
		}
	}
}

func atLeastOne(got []string) bool { return len(got) > 0 }

func callWithProgress(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: "q-developer-agent", Arguments: args}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestQAgentFlavours(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			// The result is the reply: no "> ", no banners or description blocks.
			agent := newFakeAgent(t, f, `FAKEQ_OUTPUT=The answer.\n`, "FAKEQ_TOOLS=fs_read,@git/status")
			cs, _ := agentServer(t, agent, time.Hour)
			res := callWithProgress(t, cs, map[string]any{"prompt": "hi", "trust-tools": "fs_read,@git/status"})
			if text := mcptest.Text(res); res.IsError || text != "Let me use the tools for that.\n\nThe answer.\n" {
				t.Fatalf("%+v %q", res, text)
			}
			// An MCP tool trusted by its bare name is not trusted: q stops, kiro denies; either way
			// isError names the tool and the exact trust-tools value.
			res = callWithProgress(t, cs, map[string]any{"prompt": "hi", "trust-tools": "fs_read,status"})
			text := mcptest.Text(res)
			if !res.IsError || !strings.Contains(text, "tool @git/status") || !strings.Contains(text, "to allow it, run again with trust-tools fs_read,@git/status (or yolo-mode true to trust every tool)") {
				t.Fatalf("untrusted: %+v %q", res, text)
			}
			// A prompt "-h" reaches the model; one over the agent's cut is refused, naming its size.
			agent.Set("FAKEQ_TOOLS=", "FAKEQ_OUTPUT=", "FAKEQ_ECHO_PROMPT=1")
			if res = callWithProgress(t, cs, map[string]any{"prompt": "-h"}); res.IsError || mcptest.Text(res) != "-h\n" {
				t.Fatalf("-h: %+v %q", res, mcptest.Text(res))
			}
			res = callWithProgress(t, cs, map[string]any{"prompt": strings.Repeat("a", 400_001)})
			if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "400001 bytes, over the 400000 bytes") {
				t.Fatalf("long prompt: %+v %q", res, text)
			}
		})
	}
}

func TestQAgentFlavourFailures(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			// An API error at exit 0 after a partial reply: isError, with the partial reply.
			agent := newFakeAgent(t, f, "FAKEQ_OUTPUT=partial answer", "FAKEQ_FAIL=api")
			cs, _ := agentServer(t, agent, time.Hour)
			res := callWithProgress(t, cs, map[string]any{"prompt": "hi"})
			if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "failed after a partial reply") || !strings.HasSuffix(text, "partial answer") {
				t.Fatalf("%+v %q", res, text)
			}
			// An unknown agent names the agent.
			agent.Set("FAKEQ_FAIL=", "FAKEQ_AGENTS=dev")
			res = callWithProgress(t, cs, map[string]any{"prompt": "hi", "agent": "reviewer"})
			if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, `no agent named "reviewer"`) {
				t.Fatalf("%+v %q", res, text)
			}
			// An expired login at exit 0 after a partial reply: isError, a login failure that says
			// how to log in, with the partial reply.
			agent.Set("FAKEQ_AGENTS=", "FAKEQ_FAIL=auth")
			res = callWithProgress(t, cs, map[string]any{"prompt": "hi"})
			if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "is not logged in (Authentication") ||
				!strings.Contains(text, "KIRO_API_KEY") || !strings.HasSuffix(text, "partial answer") {
				t.Fatalf("expired login: %+v %q", res, text)
			}
		})
	}
}

// kiro-cli with no credential at all would wait forever for a device login: the tool call fails
// at once (the timeout is far longer) with how to log in; with KIRO_API_KEY it runs.
func TestQAgentKiroNoCredential(t *testing.T) {
	for _, k := range []string{"KIRO_API_KEY", "AMAZON_Q_SIGV4"} { // qkit's login check reads them
		t.Setenv(k, "")
	}
	agent := newFakeAgent(t, "kiro", "FAKEQ_OUTPUT=the answer", "FAKEQ_LOGGED_OUT=1", "AGENT_TIMEOUT=600")
	cs, _ := agentServer(t, agent, time.Hour)
	res := callWithProgress(t, cs, map[string]any{"prompt": "hi"})
	text := mcptest.Text(res)
	if !res.IsError || !strings.Contains(text, "is not logged in (it started a device login, which waits for a browser; qkit stopped it): run ") ||
		!strings.Contains(text, "login in a terminal") || !strings.Contains(text, "KIRO_API_KEY") || strings.Contains(strings.ToLower(text), "timed out") {
		t.Fatalf("%+v %q", res, text)
	}
	t.Setenv("KIRO_API_KEY", "ci-key") // for qkit's login check
	agent.Set("KIRO_API_KEY=ci-key")
	if res := callWithProgress(t, cs, map[string]any{"prompt": "hi"}); res.IsError || mcptest.Text(res) != "the answer" {
		t.Fatalf("with KIRO_API_KEY: %+v %q", res, mcptest.Text(res))
	}
}

// The first progress notification comes with the agent's first line, long before the interval;
// the next ones wait for it. A tool in use is named.
func TestQAgentProgressFromFirstLine(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			// The lines 250 ms apart: the first one's notification must go out before the
			// second line replaces it (the latest wins), on a loaded machine too.
			cs, msgs := flavourServer(t, f, time.Hour, "FAKEQ_LINES=3", "FAKEQ_INTERVAL=250ms")
			res := callWithProgress(t, cs, map[string]any{"prompt": "hi"})
			if res.IsError {
				t.Fatalf("%+v", res)
			}
			if got := progressUntil(msgs, atLeastOne); len(got) != 1 || !strings.HasSuffix(got[0], ": line 1") {
				t.Fatalf("notifications %q, want one with the first line", got)
			}
			cs, msgs = flavourServer(t, f, time.Hour, "FAKEQ_TOOLS=@git/status", "FAKEQ_OUTPUT=ok")
			callWithProgress(t, cs, map[string]any{"prompt": "hi", "yolo-mode": true})
			// The first line ("Let me use the tools for that.") goes at once, or what came right
			// after it (the tool, the next line: the latest wins); nothing more within the interval.
			if got := progressUntil(msgs, atLeastOne); len(got) != 1 || strings.Contains(got[0], "has been running") {
				t.Fatalf("notifications %q", got)
			}
			cs, msgs = flavourServer(t, f, 30*time.Millisecond, "FAKEQ_TOOLS=@git/status", "FAKEQ_OUTPUT=ok", "FAKEQ_SLEEP=300ms")
			callWithProgress(t, cs, map[string]any{"prompt": "hi", "yolo-mode": true})
			// The tool's own message may give way to a later line within the interval; the
			// heartbeats then name it.
			namesTool := func(got []string) bool {
				all := strings.Join(got, "\n")
				return strings.Contains(all, "is running tool status from MCP server git") || strings.Contains(all, "tools used: @git/status")
			}
			if got := progressUntil(msgs, namesTool); !namesTool(got) {
				t.Fatalf("notifications %q do not name the tool", got)
			}
		})
	}
}

// override-model takes any name: nothing runs before the agent itself (no model probe, as no
// installation or login check), and q refuses what it does not know.
func TestQAgentFlavourModels(t *testing.T) {
	t.Parallel()
	cs, _ := flavourServer(t, "kiro", time.Hour, "FAKEQ_OUTPUT=ok")
	if res := callWithProgress(t, cs, map[string]any{"prompt": "hi", "override-model": "claude-sonnet-4.6"}); res.IsError {
		t.Fatalf("%q", mcptest.Text(res))
	}
	cs, _ = flavourServer(t, "q", time.Hour, "FAKEQ_OUTPUT=ok")
	res := callWithProgress(t, cs, map[string]any{"prompt": "hi", "override-model": "claude-sonnet-4.5"})
	if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, "Model 'claude-sonnet-4.5' does not exist") {
		t.Fatalf("q: %+v %q", res, text)
	}
}
