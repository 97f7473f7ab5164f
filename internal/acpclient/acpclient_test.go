package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/proctest"
	"github.com/qkit-cli/qkit/internal/streamjson/streamjsontest"
)

// TestMain lets the test binary act as the agent (`q acp`; fakeqtest.Use).
// The agents it starts run without the race runtime's second of sleep at exit (a -race fake would
// take a second to end), as make test's race pass runs everything, unless GORACE says otherwise:
// the process's own GORACE was read when it started, so only they see the change.
func TestMain(m *testing.M) {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		_ = os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+g))
	}
	fakeqtest.Main(m)
}

// fake is the fake agent for a test that runs in parallel with others, so sets no variable of
// the test process (t.Setenv): the fake's environment (FAKEQ_AS_Q, as fakeqtest.Use sets it, the
// knobs in env, and HOME in a temporary directory, where kiro keeps sessions) goes to the agent
// in RunOptions.Env, and the run starts it in a temporary dir. The login probe is armed as in
// qkit (its whoami runs with Env too).
func fake(t *testing.T, env ...string) RunOptions {
	t.Helper()
	o := fakeEnv(t, env...)
	o.Limits.LoginProbeAfter = 0
	return o
}

// fakeEnv is fake with the login probe off unless the test arms it.
func fakeEnv(t *testing.T, env ...string) RunOptions {
	t.Helper()
	o := RunOptions{
		Limits:  agent.Limits{Command: os.Args[0], Timeout: time.Minute, MaxResponseSize: 2 << 20, Grace: 2 * time.Second, LoginProbeAfter: -1},
		Request: agent.Request{Prompt: "hello", Dir: t.TempDir()},
	}
	o.Env = append(os.Environ(), "FAKEQ_AS_Q=1", "HOME="+t.TempDir())
	o.Env = append(o.Env, env...) // the last of a name wins
	return o
}

// envOf is the value of name in o.Env (the last one wins, as for the agent).
func envOf(o RunOptions, name string) string {
	v := ""
	for _, kv := range o.Env {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v = val
		}
	}
	return v
}

// events collects a run's events.
type events struct {
	mu  sync.Mutex
	all []agent.Event
}

func (e *events) add(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) types() []agent.EventType {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []agent.EventType
	for _, ev := range e.all {
		if len(out) == 0 || out[len(out)-1] != ev.Type || ev.Type != agent.EventMessage {
			out = append(out, ev.Type)
		}
	}
	return out
}

func allow(option string) PermissionFunc {
	return func(context.Context, PermissionRequest) (Decision, error) {
		return Decision{OptionID: option, By: "policy"}, nil
	}
}

func TestArgv(t *testing.T) {
	t.Parallel()
	l := agent.Limits{Command: "kiro-cli", DefaultModel: "auto"}
	got := Argv(l, agent.Request{Agent: "dev", Model: "claude-sonnet-4.5", TrustAll: true, TrustTools: []string{"read, write", ""}})
	want := []string{"kiro-cli", "acp", "--agent", "dev", "--model", "claude-sonnet-4.5", "-a", "--trust-tools=read,write"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Argv(l, agent.Request{}); !reflect.DeepEqual(got, []string{"kiro-cli", "acp", "--model", "auto"}) {
		t.Errorf("default model: %q", got)
	}
	// The fake records what it was started with.
	rec := filepath.Join(t.TempDir(), "argv")
	o := fake(t, "FAKEQ_RECORD="+rec, "FAKEQ_OUTPUT=ok")
	o.Request.Model, o.Request.TrustTools = "m", []string{"shell"}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(rec)
	if strings.TrimSpace(string(data)) != `["acp","--model","m","--trust-tools=shell"]` {
		t.Errorf("recorded %s", data)
	}
}

func TestRunReply(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_OUTPUT=first line\\nsecond line\\n", "FAKEQ_ACP_THOUGHT=thinking", "FAKEQ_ACP_PLAN=1")
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "first line\nsecond line\n" || res.StopReason != "end_turn" || res.ExitCode != 0 || res.TimedOut || res.Truncated {
		t.Errorf("result %+v", res)
	}
	if res.Usage.Credits != 0.05 || res.Usage.ContextPercent != 12.5 {
		t.Errorf("usage %+v", res.Usage)
	}
	if res.Agent != "Kiro CLI Agent 2.0.1" || res.SessionID == "" {
		t.Errorf("agent %q session %q", res.Agent, res.SessionID)
	}
	want := []agent.EventType{agent.EventUsage, agent.EventThought, agent.EventPlan, agent.EventMessage, agent.EventPlan, agent.EventUsage}
	if got := ev.types(); !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestToolCallsAndPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	o := fake(t, "FAKEQ_ACP_TOOLS=read:notes.txt,shell:echo hi,write:out.txt", "FAKEQ_ACP_RAN="+ran, "FAKEQ_OUTPUT=done")
	if err := os.WriteFile(filepath.Join(o.Request.Dir, "notes.txt"), []byte("old notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked []string
	var mu sync.Mutex
	o.Permission = func(_ context.Context, r PermissionRequest) (Decision, error) {
		mu.Lock()
		asked = append(asked, r.Tool.Kind+" "+r.Tool.Title)
		mu.Unlock()
		return Decision{OptionID: "allow_once", By: "person"}, nil
	}
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	// The read inside the cwd is not gated (kiro's rule); shell and write are, each asked once.
	if !reflect.DeepEqual(asked, []string{"execute Running: echo hi", "edit Writing out.txt"}) {
		t.Errorf("asked %q", asked)
	}
	// Each approved tool ran exactly once: approval did not re-run anything.
	if data, _ := os.ReadFile(ran); string(data) != "read:notes.txt\nshell:echo hi\nwrite:out.txt\n" {
		t.Errorf("ran %q", data)
	}
	if len(res.Tools) != 3 {
		t.Fatalf("tools %+v", res.Tools)
	}
	read, shell, write := res.Tools[0], res.Tools[1], res.Tools[2]
	if read.Kind != "read" || read.Status != "completed" || read.Output != "old notes" || len(read.Locations) != 1 {
		t.Errorf("read %+v", read)
	}
	if shell.Kind != "execute" || shell.Output != "hi\n" || shell.Denied {
		t.Errorf("shell %+v", shell)
	}
	if write.Kind != "edit" || len(write.Diffs) != 1 || write.Diffs[0].NewText != "written by fakeq\n" || write.Diffs[0].OldText != nil {
		t.Errorf("write %+v", write)
	}
	var decided []agent.Permission
	for _, e := range ev.all {
		if e.Type == agent.EventPermissionDecided {
			decided = append(decided, *e.Permission)
		}
	}
	if len(decided) != 2 || decided[0].Decision != "allow_once" || decided[0].DecidedBy != "person" || decided[0].Tool.Title != "Running: echo hi" {
		t.Errorf("decided %+v", decided)
	}
}

func TestRejectEndsTurnWithRefusal(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	o := fake(t, "FAKEQ_ACP_TOOLS=shell:rm -rf x,shell:echo never", "FAKEQ_ACP_RAN="+ran, "FAKEQ_OUTPUT=not reached")
	o.Permission = allow("reject_once")
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "refusal" || res.Output != "" || len(res.Tools) != 1 || !res.Tools[0].Denied || res.Tools[0].Status != "failed" {
		t.Errorf("result %+v", res)
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Error("a rejected tool ran")
	}
}

func TestAllowAlwaysAsksOnce(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_TOOLS=shell:true,shell:true,shell:true")
	n := 0
	o.Permission = func(context.Context, PermissionRequest) (Decision, error) {
		n++
		return Decision{OptionID: "allow_always", By: "person"}, nil
	}
	if _, err := Run(t.Context(), o); err != nil || n != 1 {
		t.Errorf("asked %d times, err %v", n, err)
	}
}

func TestPermissionErrorEndsTurn(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	o := fake(t, "FAKEQ_ACP_TOOLS=shell:echo hi", "FAKEQ_ACP_RAN="+ran, "FAKEQ_GRANDCHILD="+filepath.Join(t.TempDir(), "pid"))
	o.Permission = func(_ context.Context, r PermissionRequest) (Decision, error) {
		return Decision{}, errors.New("no one to ask about " + r.Tool.Title)
	}
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err == nil || err.Error() != "no one to ask about Running: echo hi" {
		t.Fatalf("err %v", err)
	}
	// The answer is reported before the failure ends the turn: a stream shows what was decided.
	decided := 0
	for _, e := range ev.all {
		if e.Type == agent.EventPermissionDecided && e.Permission.Decision == "cancelled" && e.Permission.DecidedBy == "policy" {
			decided++
		}
	}
	if decided != 1 {
		t.Errorf("%d permission_decided events (cancelled, by policy), want 1", decided)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Error("the tool ran")
	}
	gone(t, pidIn(t, envOf(o, "FAKEQ_GRANDCHILD")))
}

func TestSizeCap(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_LINES=1000")
	o.Limits.MaxResponseSize = 100
	logged := output.NewHeadBuffer(0) // safe for the connection's goroutines, which log too
	o.Limits.Logger = slog.New(slog.NewTextHandler(logged, nil))
	res, err := Run(t.Context(), o)
	// The cut is logged as the text runner logs it (agent.Run).
	if log := string(logged.Head()); !strings.Contains(log, `level=WARN msg="agent response truncated" original_bytes=`) {
		t.Errorf("log: %s", log)
	}
	if err != nil || !res.Truncated || res.OriginalSize < 8000 || !strings.HasPrefix(res.Output, "line 1\n") || !strings.Contains(res.Notice, "TRUNCATED") && !strings.Contains(strings.ToLower(res.Notice), "truncated") {
		t.Errorf("err %v result %+v", err, res.Result)
	}
	if len(res.Body()) > 100 {
		t.Errorf("kept %d bytes", len(res.Body()))
	}
}

func TestModelErrorAndLogin(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_MODEL_ERROR=ThrottlingException: slow down")
	_, err := Run(t.Context(), o)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Code != CodeInternal || !strings.Contains(err.Error(), "ThrottlingException: slow down") {
		t.Errorf("model error: %v", err)
	}
	// An agent that refuses session/new for want of a login (a reading the sources leave open;
	// here despite KIRO_API_KEY, so the check at initialize lets it through).
	o = fake(t, "FAKEQ_LOGGED_OUT=1", "FAKEQ_ACP_LOGIN=error", "KIRO_API_KEY=refused")
	_, err = Run(t.Context(), o)
	// The same failure as the text runner's (with its advice: KIRO_API_KEY for headless runs), and
	// still the agent's error for whoever reads the code.
	var le *agent.LoginError
	if !errors.As(err, &le) || !errors.As(err, &ae) || ae.Code != CodeAuthRequired ||
		!strings.Contains(err.Error(), "needs a login: Run 'kiro-cli login' in terminal") || !strings.Contains(err.Error(), "KIRO_API_KEY") {
		t.Errorf("logged out: %v", err)
	}
}

// TestBadAgents: each ends with a clear error (or a timeout), and no process is left.
func TestBadAgents(t *testing.T) {
	t.Parallel()
	cases := []struct {
		bad, want string
		timeout   bool
	}{
		{"exit", "does not speak the Agent Client Protocol", false},
		{"text", `not JSON-RPC on stdout (invalid character 'W' looking for beginning of value): "Welcome to Amazon Q!"`, false},
		{"silent", "", true},
		{"die", "the agent ended during the turn: " + os.Args[0], false},
		{"malformed", "not JSON-RPC on stdout", false},
		{"hang", "", true},
	}
	for _, c := range cases {
		t.Run(c.bad, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			o := fakeEnv(t, "FAKEQ_ACP_BAD="+c.bad, "FAKEQ_GRANDCHILD="+pidFile)
			// Every agent but the silent and the hanging one must have started and failed before
			// the timeout, on a loaded machine too. Those two run into it on a clock the test moves:
			// once the agent has started (recorded its argv), once its partial reply has come.
			o.Limits.Timeout = 5 * time.Second
			if c.bad == "text" || c.bad == "silent" || c.bad == "hang" {
				// These never end on their own: the grace before they are stopped is waited out
				// whole. Those that exit must not be stopped before they do, so keep the longer one.
				o.Limits.Grace = 200 * time.Millisecond
			}
			clock := fakeqtest.NewClock()
			started := make(chan struct{})
			switch c.bad {
			case "silent":
				o.Limits.Clock = clock
				rec := filepath.Join(t.TempDir(), "argv")
				o.Env = append(o.Env, "FAKEQ_RECORD="+rec)
				go func() {
					defer close(started)
					for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
						if _, err := os.Stat(rec); err == nil {
							clock.Advance(o.Limits.Timeout)
							return
						}
					}
				}()
			case "hang":
				o.Limits.Clock = clock
				var got strings.Builder
				o.OnEvent = func(ev agent.Event) {
					if got.WriteString(ev.Text); ev.Type == agent.EventMessage && got.String() == "partial answer\n" {
						clock.Advance(o.Limits.Timeout)
					}
				}
			}
			res, err := Run(t.Context(), o)
			if c.bad == "silent" {
				<-started
			}
			if c.timeout {
				if err != nil || !res.TimedOut || !strings.Contains(res.Output, "TIMED OUT") {
					t.Errorf("err %v result %+v", err, res.Result)
				}
			} else if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
			if c.bad == "die" && err != nil && !strings.Contains(err.Error(), "exited with status 1: error: the model stream broke") {
				t.Errorf("die: %v", err)
			}
			if c.bad == "hang" && res.Output != "partial answer\n"+res.Notice {
				t.Errorf("partial output %q", res.Output)
			}
			if data, _ := os.ReadFile(pidFile); len(data) > 0 {
				gone(t, pidIn(t, pidFile))
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_LINES=100000", "FAKEQ_INTERVAL=10ms")
	ctx, cancel := context.WithCancel(t.Context())
	o.OnEvent = func(ev agent.Event) {
		if ev.Type == agent.EventMessage && ev.Text == "line 3\n" {
			cancel()
		}
	}
	res, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) || res.StopReason != "cancelled" {
		t.Errorf("err %v stop %q", err, res.StopReason)
	}
}

func TestLoadSession(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ECHO_PROMPT=1")
	o.Request.Prompt = "first question"
	first, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.SessionID, o.Request.Prompt = first.SessionID, "second question"
	var ev events
	o.OnEvent = ev.add
	second, err := Run(t.Context(), o)
	if err != nil || second.Output != "second question\n" || second.SessionID != first.SessionID {
		t.Fatalf("err %v result %+v", err, second)
	}
	for _, e := range ev.all {
		if strings.Contains(e.Text, "first") {
			t.Errorf("the replayed history reached the run: %+v", e)
		}
	}

	// Replay comes through the connection's callbacks before LoadSession returns.
	var replayed []string
	c, err := Start(t.Context(), Options{Command: os.Args[0], Args: []string{"acp"}, Env: o.Env, Grace: 500 * time.Millisecond,
		OnNotification: func(method string, params json.RawMessage) {
			if method == "session/update" {
				replayed = append(replayed, string(params))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoadSession(t.Context(), first.SessionID, o.Request.Dir, nil); err != nil {
		t.Fatal(err)
	}
	if len(replayed) != 4 || !strings.Contains(replayed[0], "user_message_chunk") || !strings.Contains(replayed[3], "second question") {
		t.Errorf("replayed %q", replayed)
	}
}

func TestLoadUnknownSession(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"error", "hang", "exit"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			o := fakeEnv(t, "FAKEQ_ACP_LOAD="+how)
			o.SessionID = "0b6f3c1e-7d0a-4b8e-9d3c-2f1e0a9b8c7d"
			// The hanging agent runs into the load timeout; the others answer at once, and must
			// not be taken for hanging when a loaded machine slows them.
			o.LoadTimeout = 10 * time.Second
			if how == "hang" {
				o.LoadTimeout = time.Second
			}
			_, err := Run(t.Context(), o)
			want := map[string]string{
				"error": "session/load: the agent answered error -32603: Internal error: Failed to start session",
				"hang":  "session/load got no answer within 1s",
				"exit":  "session/load: the agent is gone: " + os.Args[0],
			}[how]
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err %v, want %q", err, want)
			}
			// Only the agent's "not found" answer says the session does not exist.
			var nf *SessionNotFoundError
			if errors.As(err, &nf) != (how == "error") || (nf != nil && nf.ID != o.SessionID) {
				t.Errorf("SessionNotFoundError %+v from %v", nf, err)
			}
		})
	}
}

// TestSessionNotFound: which answers to session/load say the session does not exist (kiro's
// -32603 with "session … not found" in its details, or ACP's -32002 resource not found) and which
// are other failures (kiro's "active in another process", a login).
func TestSessionNotFound(t *testing.T) {
	for _, c := range []struct {
		err  *AgentError
		want bool
	}{
		{&AgentError{Code: CodeInternal, Message: "Internal error", Details: "Failed to start session: session 0b6f not found"}, true},
		{&AgentError{Code: CodeInternal, Message: "Internal error", Details: "Failed to start session: Session not found"}, true},
		{&AgentError{Code: CodeResourceNotFound, Message: "Resource not found"}, true},
		{&AgentError{Code: CodeInternal, Message: "Internal error", Details: "Failed to start session: Session is active in another process (PID 42)"}, false},
		{&AgentError{Code: CodeInternal, Message: "Internal error", Details: "model not found"}, false},
		{&AgentError{Code: CodeAuthRequired, Message: "Authentication required"}, false},
	} {
		if got := sessionNotFound(c.err); got != c.want {
			t.Errorf("%v: not found %v, want %v", c.err, got, c.want)
		}
	}
	e := &SessionNotFoundError{ID: "s1", Err: &AgentError{Code: CodeInternal, Message: "Internal error", Details: "session s1 not found"}}
	if want := `session "s1" not found: session/load: the agent answered error -32603: Internal error: session s1 not found`; e.Error() != want {
		t.Errorf("%q, want %q", e.Error(), want)
	}
}

// testFiles serves fs/* from memory, recording the calls.
type testFiles struct {
	mu    sync.Mutex
	calls []string
}

func (f *testFiles) ReadTextFile(_ context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read "+filepath.Base(r.Path))
	return acp.ReadTextFileResponse{Content: "from the client"}, nil
}

func (f *testFiles) WriteTextFile(_ context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write "+filepath.Base(r.Path)+" "+r.Content)
	return acp.WriteTextFileResponse{}, nil
}

func TestClientFiles(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_V3=1", "FAKEQ_ACP_TOOLS=read:a.txt,write:b.txt", "FAKEQ_ACP_WRITE_TEXT=new")
	files := &testFiles{}
	o.Files, o.Permission = files, allow("allow_once")
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files.calls, []string{"read a.txt", "write b.txt new"}) || res.Tools[0].Output != "from the client" {
		t.Errorf("calls %q tools %+v", files.calls, res.Tools)
	}
	if _, err := os.Stat(filepath.Join(o.Request.Dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the agent wrote the file itself")
	}
	// Without a Files handler nothing is advertised and the agent does its own I/O (v2 always does).
	o = fake(t, "FAKEQ_ACP_V3=1", "FAKEQ_ACP_TOOLS=write:b.txt")
	o.Permission = allow("allow_once")
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.Request.Dir, "b.txt")); err != nil {
		t.Error(err)
	}
}

func TestKiroMetadata(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		want agent.Usage
	}{
		{`{"sessionId":"s"}`, false, agent.Usage{}},
		{`{"sessionId":"s","contextUsagePercentage":3.5}`, true, agent.Usage{ContextPercent: 3.5}},
		{`{"sessionId":"s","contextUsagePercentage":40,"meteringUsage":[{"value":0.25,"unit":"credit","unitPlural":"credits"},{"value":1,"unit":"credit"}],"turnDurationMs":1200}`,
			true, agent.Usage{Credits: 1.25, ContextPercent: 40, TurnDurationMs: 1200}},
		{`[]`, false, agent.Usage{}},
	} {
		_, u, ok := ParseKiroMetadata([]byte(c.in))
		if ok != c.ok || u != c.want {
			t.Errorf("%s: %v %+v", c.in, ok, u)
		}
	}
}

func TestRoute(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		``,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","method":"_kiro.dev/compaction/status","params":{}}`,
		`{"content":"bare","type":"text"}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`,
	}, "\n")
	var sdk strings.Builder
	var notes []string
	err := route(strings.NewReader(in), &sdk, func(method string, params json.RawMessage) { notes = append(notes, method) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(notes, []string{"session/update", "_kiro.dev/compaction/status", bareText}) {
		t.Errorf("notifications %q", notes)
	}
	if strings.Count(sdk.String(), "\n") != 2 {
		t.Errorf("to the SDK: %q", sdk.String())
	}
	var me *MalformedError
	if err := route(strings.NewReader("{\"id\":1}\nnot json\n"), &sdk, func(string, json.RawMessage) {}); !errors.As(err, &me) || me.Line != "not json" {
		t.Errorf("malformed: %v", err)
	}
	// An unknown update kind is not guessed into another variant.
	if _, _, ok := decodeUpdate([]byte(`{"sessionId":"s","update":{"sessionUpdate":"stream_stall_notice","content":{"type":"text","text":"x"}}}`)); ok {
		t.Error("unknown update kind decoded")
	}
}

func FuzzRoute(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{"type":"diff","path":"/a","newText":"b"}]}}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"_kiro.dev/metadata","params":{"sessionId":"s","meteringUsage":[{"value":1,"unit":"credit"}]}}` + "\n{\"id\":2}\n"))
	f.Add([]byte("{\"content\":\"x\",\"type\":\"text\"}\nnull\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Conn{o: Options{OnEvent: func(string, agent.Event) {}}, tools: map[string]agent.ToolCall{}}
		c.log = discard()
		var sdk strings.Builder
		_ = route(strings.NewReader(string(data)), &sdk, c.notify)
	})
}

// gone waits until pid no longer runs.
func gone(t *testing.T, pid int) {
	t.Helper()
	if err := proctest.WaitGone(pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func pidIn(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestEventsMatchSchema: every event the ACP tests yield is a valid stream-json line.
func TestEventsMatchSchema(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_TOOLS=read:a.txt,shell:echo hi,write:b.txt,mcp:github/create_issue,shell:no",
		"FAKEQ_ACP_THOUGHT=hmm", "FAKEQ_ACP_PLAN=1", "FAKEQ_OUTPUT=done")
	_ = os.WriteFile(filepath.Join(o.Request.Dir, "b.txt"), []byte("old"), 0o600)
	n := 0
	o.Permission = func(context.Context, PermissionRequest) (Decision, error) {
		n++
		if n == 4 {
			return Decision{OptionID: "reject_once", By: "person"}, nil
		}
		return Decision{OptionID: "allow_once", By: "policy"}, nil
	}
	var ev events
	o.OnEvent = ev.add
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	// The rejection ended that turn (refusal) before the reply: a second run has one.
	o = fake(t, "FAKEQ_OUTPUT=done", "FAKEQ_ACP_TOOLS=")
	o.OnEvent = ev.add
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	seen := map[agent.EventType]bool{}
	for _, e := range ev.all {
		line, _ := json.Marshal(e)
		if err := streamjsontest.Validate(line); err != nil {
			t.Error(err)
		}
		seen[e.Type] = true
	}
	for _, typ := range []agent.EventType{agent.EventMessage, agent.EventThought, agent.EventToolCall, agent.EventToolCallUpdate,
		agent.EventPlan, agent.EventPermissionRequested, agent.EventPermissionDecided, agent.EventUsage} {
		if !seen[typ] {
			t.Errorf("no %s event: the test covers less than it says", typ)
		}
	}
}

// TestTypeScriptStandIn runs the client against interop/stand-in-agent.js (the official TypeScript
// SDK's agent side) and checks every event against the stream-json schema. It needs node and
// interop's node_modules (make nodedeps installs them); see fakeqtest.TypeScriptAgent.
func TestTypeScriptStandIn(t *testing.T) {
	t.Parallel()
	script := fakeqtest.TypeScriptAgent(t)
	o := fake(t, "TS_AGENT_TOOLS=echo one,echo two", "TS_AGENT_READ=notes.txt", "TS_AGENT_WRITE=../outside.txt")
	o.Limits.Command = script
	must(t, os.WriteFile(filepath.Join(o.Request.Dir, "notes.txt"), []byte("notes\n"), 0o600))
	var refused []string
	o.Files = &DirFiles{Root: o.Request.Dir, OnRefused: func(e *OutsideError) { refused = append(refused, e.Op) }}
	o.Terminals = &DirTerminals{Root: o.Request.Dir}
	asked := 0
	o.Permission = func(_ context.Context, r PermissionRequest) (Decision, error) {
		asked++
		if asked == 2 {
			return Decision{OptionID: "no", By: "person"}, nil
		}
		return Decision{OptionID: "yes", By: "person"}, nil
	}
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" || res.SessionID != "ts-1" || res.Agent != "ts-stand-in 1.0.0" || !strings.HasPrefix(res.Output, "chunk 1 of hello\n") {
		t.Errorf("result %+v", res)
	}
	if len(res.Tools) != 4 || res.Tools[0].Output != "one\n" || !res.Tools[1].Denied || res.Tools[2].Output != "notes\n" || res.Tools[3].Status != "failed" {
		t.Errorf("tools %+v", res.Tools)
	}
	if !slices.Equal(refused, []string{"write"}) {
		t.Errorf("refused %q", refused)
	}
	for _, e := range ev.all {
		line, _ := json.Marshal(e)
		if err := streamjsontest.Validate(line); err != nil {
			t.Error(err)
		}
	}
}

// TestTimeoutPausedForPermission: the time a permission takes to decide is not the agent's time.
func TestTimeoutPausedForPermission(t *testing.T) {
	t.Parallel()
	o := fakeEnv(t, "FAKEQ_ACP_TOOLS=shell:echo hi", "FAKEQ_OUTPUT=done")
	// The timeout is counted on a clock that moves only while the person decides, a second longer
	// than the whole timeout: were that time the agent's, the timeout would fire then. The agent's
	// own part (start, set-up, the tool, the reply) takes none of it, on a loaded machine too.
	o.Limits.Timeout = 5 * time.Second
	clock := fakeqtest.NewClock()
	o.Limits.Clock = clock
	o.Permission = func(ctx context.Context, _ PermissionRequest) (Decision, error) {
		clock.Advance(6 * time.Second) // a person who takes longer than the whole run may
		if err := ctx.Err(); err != nil {
			return Decision{}, err
		}
		return Decision{OptionID: "allow_once", By: "person"}, nil
	}
	res, err := Run(t.Context(), o)
	if err != nil || res.TimedOut || res.Output != "done" {
		t.Errorf("err %v result %+v", err, res.Result)
	}
}

// TestSubagentSessions: what kiro's subagents stream under their own sessions is not the run's
// reply, but their credits are the run's cost.
func TestSubagentSessions(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_SUBAGENT=1", "FAKEQ_OUTPUT=the answer")
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "the answer" || res.Usage.Credits != 0.3 || res.Usage.ContextPercent != 12.5 {
		t.Errorf("output %q usage %+v", res.Output, res.Usage)
	}
	if len(res.Tools) != 1 || res.Tools[0].Title != "Summarizing" {
		t.Errorf("tools %+v", res.Tools)
	}
	for _, e := range ev.all {
		if strings.Contains(e.Text, "subagent") {
			t.Errorf("a subagent's event reached the run: %+v", e)
		}
	}
}

// TestRunGate: an event that overtakes session/new's answer is held and passed on in order once
// the session is known; a load's replay is dropped; another session's events reach the handler
// with the run's session beside them.
func TestRunGate(t *testing.T) {
	var got []string
	g := &runGate{handle: func(sessionID, sid string, ev agent.Event) {
		got = append(got, sessionID+"/"+sid+":"+ev.Text)
	}}
	g.replaying(true)
	g.event("s", agent.Event{Type: agent.EventMessage, Text: "history"})
	g.replaying(false)
	g.event("s", agent.Event{Type: agent.EventUsage, Text: "early"})
	g.event("sub", agent.Event{Type: agent.EventUsage, Text: "sub"})
	g.open("s")
	g.event("s", agent.Event{Type: agent.EventMessage, Text: "late"})
	want := []string{"s/s:early", "sub/s:sub", "s/s:late"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// Between two prompts of a run, events are held for the next prompt, in order.
	var next []string
	g.detach()
	g.event("s", agent.Event{Type: agent.EventUsage, Text: "between"})
	g.attach(func(sessionID, sid string, ev agent.Event) { next = append(next, sessionID+"/"+sid+":"+ev.Text) })
	g.event("s", agent.Event{Type: agent.EventMessage, Text: "second"})
	if want := []string{"s/s:between", "s/s:second"}; !reflect.DeepEqual(next, want) || len(got) != 3 {
		t.Errorf("next prompt got %v, want %v (the first still %v)", next, want, got)
	}
}

// kiro 1.26.2 streamed its reply as bare {"content":…,"type":"text"} lines, and 2.19.0 sends a
// stream_stall_notice no ACP schema knows: the reply is still the reply.
func TestKiroQuirks(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_BARE=1", "FAKEQ_ACP_STALL=1", "FAKEQ_OUTPUT=first\\nsecond\\n")
	var ev events
	o.OnEvent = ev.add
	res, err := Run(t.Context(), o)
	if err != nil || res.Output != "first\nsecond\n" || res.StopReason != "end_turn" {
		t.Fatalf("err %v result %+v", err, res)
	}
	if got := ev.types(); !slices.Contains(got, agent.EventMessage) {
		t.Errorf("events %v", got)
	}
}

// The fake starts as kiro is launched (`--trust-tools a,b` as well as `=`), and answers
// session/set_model with {} as kiro does.
func TestFakeLaunchAndSetModel(t *testing.T) {
	t.Parallel()
	o := fake(t, "FAKEQ_ACP_TOOLS=shell:true", "FAKEQ_OUTPUT=ok\\n")
	asked := false
	c, err := Start(t.Context(), Options{Command: os.Args[0], Args: []string{"acp", "--trust-tools", "read,shell"}, Env: o.Env, Grace: 500 * time.Millisecond,
		Permission: func(context.Context, PermissionRequest) (Decision, error) {
			asked = true
			return Decision{Cancelled: true}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession(t.Context(), o.Request.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SDK().UnstableSetSessionModel(t.Context(), acp.UnstableSetSessionModelRequest{SessionId: s.SessionId, ModelId: "claude-sonnet-4.5"}); err != nil {
		t.Errorf("session/set_model: %v", err)
	}
	reason, err := c.Prompt(t.Context(), string(s.SessionId), []acp.ContentBlock{acp.TextBlock("hi")})
	if err != nil || reason != acp.StopReasonEndTurn || asked {
		t.Errorf("stop %q err %v asked %v: --trust-tools read,shell should cover shell", reason, err, asked)
	}
}

// Without Files or Terminals, the agent's fs/* and terminal/* requests get method-not-found.
func TestNoHandlersMethodNotFound(t *testing.T) {
	cl := &client{c: &Conn{}}
	_, err := cl.ReadTextFile(t.Context(), acp.ReadTextFileRequest{SessionId: "s", Path: "/x"})
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32601 {
		t.Errorf("fs/read_text_file: %v", err)
	}
	if _, err := cl.ReleaseTerminal(t.Context(), acp.ReleaseTerminalRequest{SessionId: "s", TerminalId: "t"}); !errors.As(err, &re) || re.Code != -32601 {
		t.Errorf("terminal/release: %v", err)
	}
	// With a handler, the request reaches it.
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello"), 0o600))
	cl.c.o.Files = &DirFiles{Root: root}
	if r, err := cl.ReadTextFile(t.Context(), acp.ReadTextFileRequest{SessionId: "s", Path: filepath.Join(root, "a.txt")}); err != nil || r.Content != "hello" {
		t.Errorf("with DirFiles: %q %v", r.Content, err)
	}
}

// An answer to a permission request that names none of the agent's options ends the turn, saying so.
func TestPermissionAnswerNotAnOption(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	o := fake(t, "FAKEQ_ACP_TOOLS=shell:echo hi", "FAKEQ_ACP_RAN="+ran)
	o.Permission = allow("allow_sometimes")
	res, err := Run(t.Context(), o)
	if err == nil || err.Error() != `permission for "Running: echo hi": the answer "allow_sometimes" is not one of the agent's options` {
		t.Fatalf("err %v", err)
	}
	if res.StopReason != "cancelled" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Error("the tool ran")
	}
}

// A line past MaxLine is refused with the limit named, not read into memory without end.
func TestRouteLineTooLong(t *testing.T) {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", MaxLine) + "\"}\n")
	var sdk strings.Builder
	err := route(in, &sdk, func(string, json.RawMessage) {})
	if err == nil || err.Error() != "the agent sent a line longer than 10 MiB" {
		t.Fatalf("err %v", err)
	}
	if strings.Count(sdk.String(), "\n") != 1 {
		t.Errorf("the line before was not passed on: %q", sdk.String())
	}
}

// An agent that closes its stdout but does not exit is named as such once the grace has passed,
// with what it wrote on stderr, and is stopped.
func TestAgentClosesStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	command := filepath.Join(dir, "kiro-cli")
	must(t, os.WriteFile(command, []byte("#!/bin/sh\necho $$ > \""+pidFile+"\"\necho 'error: lost the terminal' >&2\nexec >&-\nexec sleep 60\n"), 0o755))
	o := fake(t)
	o.Limits.Command = command
	o.Limits.Grace = 200 * time.Millisecond
	_, err := Run(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), command+" closed its stdout: error: lost the terminal") {
		t.Fatalf("err %v", err)
	}
	gone(t, pidIn(t, pidFile))
}

// TestNoEmptyUsage: a usage report that says nothing qkit keeps (kiro's metadata for a session
// that has used none of its context, a usage_update with nothing used and a cost in money) is
// no usage event, which would be {} in stream-json; one that says something is.
func TestNoEmptyUsage(t *testing.T) {
	var got []agent.Usage
	c := &Conn{log: slog.New(slog.DiscardHandler), tools: map[string]agent.ToolCall{}, o: Options{
		OnEvent: func(_ string, ev agent.Event) {
			if ev.Type == agent.EventUsage {
				got = append(got, *ev.Usage)
			}
		},
	}}
	c.notify(KiroMetadata, json.RawMessage(`{"sessionId":"s","contextUsagePercentage":0}`))
	c.notify(KiroMetadata, json.RawMessage(`{"sessionId":"s","contextUsagePercentage":0,"meteringUsage":[]}`))
	c.notify("session/update", json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":0,"size":200000}}`))
	c.notify("session/update", json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":0,"size":1000,"cost":{"amount":0.02,"currency":"USD"}}}`))
	c.notify(KiroMetadata, json.RawMessage(`{"sessionId":"s","contextUsagePercentage":2}`))
	c.notify("session/update", json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":50,"size":1000}}`))
	want := []agent.Usage{{ContextPercent: 2}, {ContextPercent: 5}}
	if !slices.Equal(got, want) {
		t.Errorf("usage events %+v, want %+v", got, want)
	}
}
