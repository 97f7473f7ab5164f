package fakeq

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func flavoured(flavour string, env ...string) []string {
	return append([]string{"FAKEQ_FLAVOUR=" + flavour}, env...)
}

func TestFlavourReply(t *testing.T) {
	for _, f := range []string{"q", "kiro"} {
		out, errOut, code := runFake(t, flavoured(f, `FAKEQ_OUTPUT=the answer\n`), "chat", "--no-interactive", "hi")
		if code != 0 || !strings.Contains(out, "> \x1b[0m") || !strings.Contains(out, "the answer") || !strings.Contains(out, "\x1b[") {
			t.Fatalf("%s: code %d stdout %q", f, code, out)
		}
		if !strings.Contains(errOut, "You are chatting with") {
			t.Fatalf("%s: stderr %q lacks the welcome text", f, errOut)
		}
		if credits := strings.Contains(errOut, "▸ Credits:"); credits != (f == "kiro") {
			t.Fatalf("%s: credits line %v in %q", f, credits, errOut)
		}
		// NO_COLOR removes colours only (kiro keeps the reset after its prefix).
		out, _, _ = runFake(t, flavoured(f, "FAKEQ_OUTPUT=x", "NO_COLOR=1"), "chat", "--no-interactive", "hi")
		want := "> x"
		if f == "kiro" {
			want = "> \x1b[0mx"
		}
		if out != want {
			t.Fatalf("%s NO_COLOR: %q, want %q", f, out, want)
		}
	}
}

// TestFlavourStreamTimeout: q's spinner on a stream timeout, as its library draws it on stdout
// (frames without a line break), and the retried response's "> " on the spinner's line.
func TestFlavourStreamTimeout(t *testing.T) {
	out, _, code := runFake(t, flavoured("q", `FAKEQ_OUTPUT=part one\npart two\n`, "FAKEQ_STREAM_TIMEOUT=1", "NO_COLOR=1"), "chat", "--no-interactive", "hi")
	want := "> part one\n\r⠋ Dividing up the work...\r⠙ Dividing up the work...\r⠹ Dividing up the work...\r⠸ Dividing up the work..." +
		"\r⠼ Dividing up the work...\r⠼ Dividing up the work...> part two\n"
	if code != 0 || out != want {
		t.Fatalf("code %d stdout %q, want %q", code, out, want)
	}
}

func TestFlavourTools(t *testing.T) {
	env := []string{"FAKEQ_TOOLS=fs_read,@git/status", "FAKEQ_OUTPUT=done", "NO_COLOR=1"}
	out, _, code := runFake(t, flavoured("q", env...), "chat", "--no-interactive", "--trust-tools=fs_read,@git/status", "hi")
	if code != 0 || !strings.Contains(out, "🛠️  Using tool: fs_read (trusted)\n ⋮ \n ● Reading file") ||
		!strings.Contains(out, "🛠️  Using tool: status from mcp server git (trusted)") || !strings.HasSuffix(out, "> done") {
		t.Fatalf("trusted: %d %q", code, out)
	}
	// q: an untrusted tool stops the run with the approval error, after its banner; a bare MCP name
	// does not trust it.
	out, errOut, code := runFake(t, flavoured("q", env...), "chat", "--no-interactive", "--trust-tools=fs_read,status", "hi")
	if code != 1 || !strings.Contains(errOut, "error: "+ApprovalError) || !strings.Contains(errOut, "WARNING: status is the name of an MCP tool") ||
		!strings.Contains(out, "Using tool: status from mcp server git\n") || strings.Contains(out, "done") {
		t.Fatalf("q untrusted: %d %q %q", code, out, errOut)
	}
	// kiro: denied, and the model carries on; exit 0.
	out, _, code = runFake(t, flavoured("kiro", "FAKEQ_TOOLS=shell", "FAKEQ_OUTPUT=all done", "NO_COLOR=1"), "chat", "--no-interactive", "hi")
	if code != 0 || !strings.Contains(out, "Using tool: shell\n") || !strings.Contains(out, "Command shell is rejected because it matches one or more rules on the denied list") ||
		!strings.HasSuffix(out, "all done") {
		t.Fatalf("kiro denied: %d %q", code, out)
	}
}

func TestFlavourFailures(t *testing.T) {
	// Auth and API errors: exit 0, after a partial reply.
	for _, f := range []string{"q", "kiro"} {
		for _, kind := range []string{"auth", "api"} {
			out, errOut, code := runFake(t, flavoured(f, "FAKEQ_FAIL="+kind, "FAKEQ_OUTPUT=partial"), "chat", "--no-interactive", "hi")
			if code != 0 || !strings.Contains(out, "partial") || !strings.Contains(strings.ToLower(errOut), map[string]string{"auth": "authentication", "api": "error"}[kind]) {
				t.Fatalf("%s %s: %d %q %q", f, kind, code, out, errOut)
			}
		}
	}
	// An expired token before any reply: exit 0, nothing at all on stdout (not even the "> ").
	for _, f := range []string{"q", "kiro"} {
		out, errOut, code := runFake(t, flavoured(f, "FAKEQ_FAIL=auth"), "chat", "--no-interactive", "hi")
		if code != 0 || out != "" || !strings.Contains(strings.ToLower(errOut), "authentication") {
			t.Fatalf("%s auth before any reply: %d %q %q", f, code, out, errOut)
		}
	}
	// q's false approval error: a stream failure after a trusted tool.
	_, errOut, code := runFake(t, flavoured("q", "FAKEQ_TOOLS=fs_read", "FAKEQ_FAIL=stream"), "chat", "--no-interactive", "-a", "hi")
	if code != 1 || !strings.Contains(errOut, "having trouble responding") || !strings.Contains(errOut, ApprovalError) {
		t.Fatalf("false approval: %d %q", code, errOut)
	}
	// Not logged in: q refuses, kiro with a bad key fails at exit 0.
	if _, errOut, code = runFake(t, flavoured("q", "FAKEQ_LOGGED_OUT=1"), "chat", "--no-interactive", "hi"); code != 1 || !strings.Contains(errOut, "please log in with q login") {
		t.Fatalf("q logged out: %d %q", code, errOut)
	}
	if _, _, code = runFake(t, flavoured("q", "FAKEQ_LOGGED_OUT=1", "AMAZON_Q_SIGV4=1", "FAKEQ_OUTPUT=x"), "chat", "--no-interactive", "hi"); code != 0 {
		t.Fatalf("q with SigV4: %d", code)
	}
	if out, errOut, code := runFake(t, flavoured("kiro", "KIRO_API_KEY=bad"), "chat", "--no-interactive", "hi"); code != 0 || out != "" || !strings.Contains(errOut, "Authentication failed.") {
		t.Fatalf("kiro bad key: %d %q %q", code, out, errOut)
	}
	// Unknown model and agent.
	if _, errOut, code = runFake(t, flavoured("q"), "chat", "--no-interactive", "--model", "gpt-5", "hi"); code != 1 || !strings.Contains(errOut, "Model 'gpt-5' does not exist. Available models: claude-sonnet-4, claude-3.7-sonnet") {
		t.Fatalf("q model: %d %q", code, errOut)
	}
	if _, errOut, code = runFake(t, flavoured("kiro", "FAKEQ_OUTPUT=x"), "chat", "--no-interactive", "--model", "gpt-5", "hi"); code != 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("kiro model: %d %q", code, errOut)
	}
	if _, errOut, code = runFake(t, flavoured("q", "FAKEQ_AGENTS=dev", "FAKEQ_OUTPUT=x"), "chat", "--no-interactive", "--agent", "rev", "hi"); code != 0 || !strings.Contains(errOut, "no agent with name rev found") {
		t.Fatalf("q agent: %d %q", code, errOut)
	}
	if _, _, code = runFake(t, flavoured("kiro", "FAKEQ_AGENTS=dev"), "chat", "--no-interactive", "--agent", "rev", "hi"); code != 4 {
		t.Fatalf("kiro agent: %d", code)
	}
	if _, _, code = runFake(t, flavoured("q"), "chat", "--bogus", "hi"); code != 2 {
		t.Fatalf("bad flag: %d", code)
	}
	// --trust-tools= (empty) is a no-op with a warning.
	if _, errOut, code = runFake(t, flavoured("q", "FAKEQ_OUTPUT=x"), "chat", "--no-interactive", "--trust-tools=", "hi"); code != 0 || !strings.Contains(errOut, "WARNING: --trust-tools was given no tools") {
		t.Fatalf("empty --trust-tools: %d %q", code, errOut)
	}
}

// kiro with no credential starts a device login and waits.
func TestKiroDeviceLoginHangs(t *testing.T) {
	c := exec.Command(self(t), "chat", "--no-interactive", "hi")
	c.Env = append(testEnv(), flavoured("kiro", "FAKEQ_LOGGED_OUT=1", "KIRO_API_KEY=")...)
	errOut := &lockedBuffer{}
	c.Stderr = errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	defer func() { _ = c.Process.Kill(); <-done }()
	// The URL comes (however slowly the fake starts), and the fake is still waiting a while after.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(errOut.String(), "user_code="); {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("exited: %v %q", err, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no device-login URL in 30 s: stderr %q", errOut.String())
		}
	}
	select {
	case err := <-done:
		done <- err
		t.Fatalf("exited after the URL: %v %q", err, errOut.String())
	case <-time.After(300 * time.Millisecond):
	}
}

// lockedBuffer is a bytes.Buffer a child's output can be copied into while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFlavourPrompt(t *testing.T) {
	for _, f := range []string{"q", "kiro"} {
		// A prompt on stdin, trimmed; an empty one is refused.
		if _, errOut, code := runFake(t, flavoured(f), "chat", "--no-interactive"); code != 1 || !strings.Contains(errOut, "Input must be supplied when running in non-interactive mode") {
			t.Fatalf("%s empty: %d %q", f, code, errOut)
		}
		// The 400,000-byte cut.
		long := strings.Repeat("a", PromptCut+10)
		out, _, _ := runFakeIn(t, long, flavoured(f, "FAKEQ_ECHO_PROMPT=1", "NO_COLOR=1"), "chat", "--no-interactive")
		if !strings.HasSuffix(out, "a"+PromptCutNotice+"\n") || strings.Count(strings.TrimSuffix(out, PromptCutNotice+"\n"), "a") != PromptCut {
			t.Fatalf("%s cut: len %d, tail %q", f, len(out), out[len(out)-50:])
		}
	}
	// The wrapper's -h: q prints help for a prompt "-h" even after "--"; kiro (clap) only before it.
	out, _, code := runFake(t, flavoured("q", "FAKEQ_ECHO_PROMPT=1"), "chat", "--no-interactive", "--", "-h")
	if code != 0 || !strings.HasPrefix(out, "Usage: q chat") {
		t.Fatalf("q -h: %d %q", code, out)
	}
	out, _, _ = runFake(t, flavoured("kiro", "FAKEQ_ECHO_PROMPT=1", "NO_COLOR=1"), "chat", "--no-interactive", "--", "-h")
	if !strings.Contains(out, "-h\n") {
		t.Fatalf("kiro -- -h: %q", out)
	}
}

func TestFlavourWhoamiAndModels(t *testing.T) {
	cases := []struct {
		env  []string
		args []string
		out  string
		code int
	}{
		{flavoured("q"), []string{"whoami"}, "Logged in with Builder ID\n", 0},
		{flavoured("q", "FAKEQ_WHOAMI=idc"), []string{"whoami"}, "Logged in with IAM Identity Center (https://example.awsapps.com/start)\n", 0},
		{flavoured("q", "FAKEQ_LOGGED_OUT=1"), []string{"whoami"}, "Not logged in\n", 1},
		{flavoured("q", "FAKEQ_LOGGED_OUT=1", "AMAZON_Q_SIGV4=1"), []string{"whoami"}, "Not logged in\n", 1},
		{flavoured("kiro", "FAKEQ_LOGGED_OUT=1", "KIRO_API_KEY=k"), []string{"whoami"}, "Authenticated with API key\n", 0},
		{flavoured("q"), []string{"whoami", "--format", "json"}, `{"accountType":"BuilderId","region":"us-east-1"}` + "\n", 0},
	}
	for _, c := range cases {
		if out, _, code := runFake(t, append(c.env, "KIRO_API_KEY="+keyOf(c.env)), c.args...); out != c.out || code != c.code {
			t.Errorf("%v %v: %d %q, want %d %q", c.env, c.args, code, out, c.code, c.out)
		}
	}
	out, _, code := runFake(t, flavoured("kiro"), "chat", "--list-models", "--format", "json")
	var v struct {
		Models []struct {
			ID string `json:"model_id"`
		} `json:"models"`
		Default string `json:"default_model"`
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Default != "auto" || len(v.Models) != 6 || v.Models[1].ID != "claude-sonnet-4.5" {
		t.Fatalf("kiro --list-models: %d %q %v", code, out, err)
	}
	if _, errOut, code := runFake(t, flavoured("q"), "chat", "--list-models", "--format", "json"); code != 2 || !strings.Contains(errOut, "unexpected argument '--list-models'") {
		t.Fatalf("q --list-models: %d %q", code, errOut)
	}
}

func keyOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "KIRO_API_KEY="); ok {
			return v
		}
	}
	return ""
}
