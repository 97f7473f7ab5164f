package agent

import (
	"bytes"
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
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/fakeq"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/proctest"
)

// TestMain lets the test binary act as the agent (fakeqtest.Use).
// The agents it starts run without the race runtime's second of sleep at exit (a -race fake would
// take a second to end), as make test's race pass runs everything, unless GORACE says otherwise:
// the process's own GORACE was read when it started, so only they see the change.
func TestMain(m *testing.M) {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		_ = os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+g))
	}
	fakeqtest.Main(m)
}

// fake sets env for the fake q (through the environment the agent inherits) and returns limits
// that run it.
func fake(t *testing.T, env ...string) Limits {
	t.Helper()
	return Limits{Command: fakeqtest.Use(t, env...), Timeout: time.Minute, MaxResponseSize: 2 << 20, StripANSI: true, Grace: 500 * time.Millisecond}
}

func recorded(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	if err := json.Unmarshal(bytes.TrimSpace(data), &argv); err != nil {
		t.Fatalf("record %q: %v", data, err)
	}
	return argv
}

func TestArgv(t *testing.T) {
	l := Limits{Command: "q"}
	cases := []struct {
		name string
		l    Limits
		r    Request
		want string
	}{
		{"plain", l, Request{Prompt: "hi"}, "q chat --no-interactive hi"},
		{"resume", l, Request{Prompt: "hi", Resume: true}, "q chat --no-interactive --resume hi"},
		{"agent", l, Request{Prompt: "hi", Agent: "dev"}, "q chat --no-interactive --agent dev hi"},
		{"model", l, Request{Prompt: "hi", Model: "claude-sonnet-4"}, "q chat --no-interactive --model claude-sonnet-4 hi"},
		{"default model", Limits{Command: "q", DefaultModel: "m1"}, Request{Prompt: "hi"}, "q chat --no-interactive --model m1 hi"},
		{"request model wins", Limits{Command: "q", DefaultModel: "m1"}, Request{Prompt: "hi", Model: "m2"}, "q chat --no-interactive --model m2 hi"},
		{"yolo", l, Request{Prompt: "hi", TrustAll: true}, "q chat --no-interactive --trust-all-tools hi"},
		{"trust tools", l, Request{Prompt: "hi", TrustTools: []string{"fs_read", " fs_write ", ""}}, "q chat --no-interactive --trust-tools=fs_read,fs_write hi"},
		{"trust tools comma list", l, Request{Prompt: "hi", TrustTools: []string{"fs_read,execute_bash"}}, "q chat --no-interactive --trust-tools=fs_read,execute_bash hi"},
		{"verbose", l, Request{Prompt: "hi", Verbose: true}, "q chat --no-interactive --verbose hi"},
		{"everything", Limits{Command: "kiro-cli"}, Request{Prompt: "hi", Resume: true, Agent: "a", Model: "m", TrustAll: true, TrustTools: []string{"t"}, Verbose: true},
			"kiro-cli chat --no-interactive --resume --agent a --model m --trust-all-tools --trust-tools=t --verbose hi"},
		{"dash prompt", l, Request{Prompt: "--- CONTEXT"}, "q chat --no-interactive -- --- CONTEXT"},
	}
	for _, c := range cases {
		got := Argv(c.l, c.r)
		want := strings.Fields(c.want)
		if c.name == "dash prompt" {
			want = []string{"q", "chat", "--no-interactive", "--", "--- CONTEXT"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, want %q", c.name, got, want)
		}
		if got[len(got)-1] != c.r.Prompt {
			t.Errorf("%s: prompt is not the last argument", c.name)
		}
	}
}

func TestValidate(t *testing.T) {
	l := Limits{Command: "q", Models: []string{"claude-sonnet-4"}}
	for _, p := range []string{"", "  ", "\n\t"} {
		if err := Validate(l, Request{Prompt: p}); !errors.Is(err, ErrEmptyPrompt) {
			t.Errorf("prompt %q: %v", p, err)
		}
	}
	if err := Validate(l, Request{Prompt: "x", Model: "gpt"}); err == nil || !strings.Contains(err.Error(), `unknown model "gpt": available models are claude-sonnet-4`) {
		t.Errorf("unknown model: %v", err)
	}
	if err := Validate(Limits{Command: "q", Timeout: -1}, Request{Prompt: "x"}); err == nil {
		t.Error("negative timeout accepted")
	}
	if err := Validate(Limits{Command: "q", MaxResponseSize: -1}, Request{Prompt: "x"}); err == nil {
		t.Error("negative size accepted")
	}
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Prompt: "a\x00b"}, "contains a NUL byte"},
		{Request{Prompt: "x", Agent: "--trust-all-tools"}, `invalid agent "--trust-all-tools": a name cannot start with "-"`},
		{Request{Prompt: "x", Model: "-m"}, `invalid model "-m"`},
	} {
		if err := Validate(Limits{Command: "q"}, c.r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	// A prompt too long for one argument (Linux refuses over 128 KiB) travels on stdin, whole.
	for _, n := range []int{PromptArgMax, PromptArgMax + 1, PromptMax} {
		long := strings.Repeat("a", n-1) + "z"
		l := fake(t, "FAKEQ_ECHO_PROMPT=1")
		res, err := Run(t.Context(), l, Request{Prompt: long}, nil)
		if err != nil || strings.TrimSpace(res.Output) != long {
			t.Errorf("a %d-byte prompt: %v (%d bytes back)", n, err, len(res.Output))
		}
		if onStdin := slices.Contains(res.Argv, long); onStdin == PromptOnStdin(Request{Prompt: long}) {
			t.Errorf("a %d-byte prompt: argv holds it: %v, on stdin: %v", n, onStdin, PromptOnStdin(Request{Prompt: long}))
		}
	}
	// Over the agent's cut: refused, naming the size and the budget setting.
	if err := Validate(Limits{Command: "q"}, Request{Prompt: strings.Repeat("a", PromptMax+1)}); !errors.Is(err, ErrPromptTooLong) ||
		!strings.Contains(err.Error(), "400001 bytes") || !strings.Contains(err.Error(), "context.max_tokens") {
		t.Errorf("over PromptMax: %v", err)
	}
	// -h and --help go on stdin, where no wrapper takes them for a help request.
	for _, f := range []string{"q", "kiro"} {
		for _, p := range []string{"-h", "--help"} {
			l := flavour(t, f, "FAKEQ_ECHO_PROMPT=1")
			res, err := Run(t.Context(), l, Request{Prompt: p}, nil)
			if err != nil || res.Output != p+"\n" || slices.Contains(res.Argv, p) {
				t.Errorf("%s %s: %v %q %q", f, p, err, res.Output, res.Argv)
			}
		}
	}
	// Nothing runs for an invalid request.
	if _, err := Run(t.Context(), Limits{Command: "/nonexistent"}, Request{Prompt: " "}, nil); !errors.Is(err, ErrEmptyPrompt) {
		t.Errorf("Run with empty prompt: %v", err)
	}
}

func TestRunRecordsArgvAndReturnsOutput(t *testing.T) {
	dir := t.TempDir()
	l := fake(t, "FAKEQ_RECORD=argv.jsonl", `FAKEQ_OUTPUT=first\nsecond\n`)
	res, err := Run(t.Context(), l, Request{Prompt: "do it", Resume: true, Model: "claude-sonnet-4", TrustTools: []string{"fs_read"}, Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "first\nsecond\n" || res.ExitCode != 0 || res.Truncated || res.TimedOut || res.OriginalSize != 13 {
		t.Fatalf("result %+v", res)
	}
	// The record is relative, so it lands in the agent's working directory: Dir is honoured.
	got := recorded(t, filepath.Join(dir, "argv.jsonl"))
	want := []string{"chat", "--no-interactive", "--resume", "--model", "claude-sonnet-4", "--trust-tools=fs_read", "do it"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("argv %q, want %q", got, want)
	}
}

func TestRunInCallersDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	l := fake(t, "FAKEQ_RECORD=argv.jsonl", "FAKEQ_OUTPUT=x")
	if _, err := Run(t.Context(), l, Request{Prompt: "p"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "argv.jsonl")); err != nil {
		t.Fatalf("agent did not run in the caller's directory: %v", err)
	}
	if wd, _ := os.Getwd(); wd != dir {
		t.Fatalf("working directory changed to %s", wd)
	}
}

// TestRunStreams cancels the run from the callback of the first line, while the agent is still
// sleeping before its second: the line was delivered as it arrived, not at exit.
func TestRunStreams(t *testing.T) {
	l := fake(t, "FAKEQ_LINES=3", "FAKEQ_INTERVAL=30s")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []string
	res, err := Run(ctx, l, Request{Prompt: "p"}, func(b []byte) {
		got = append(got, string(b))
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if strings.Join(got, "") != "line 1\n" || res.Output != "line 1\n" {
		t.Fatalf("chunks %q, output %q", got, res.Output)
	}
}

func TestRunStripsANSI(t *testing.T) {
	l := fake(t, "FAKEQ_ANSI=1", `FAKEQ_OUTPUT=hello\nworld\n`)
	var streamed strings.Builder
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, func(b []byte) { streamed.Write(b) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "hello\nworld\n" || streamed.String() != res.Output {
		t.Fatalf("output %q streamed %q", res.Output, streamed.String())
	}
	l.StripANSI = false // only the raw output keeps colours: the reply is read without them
	if res, _ = Run(t.Context(), l, Request{Prompt: "p"}, nil); res.Output != "hello\nworld\n" {
		t.Fatalf("reply with strip_ansi=false: %q", res.Output)
	}
	l.RawOutput = true
	res, _ = Run(t.Context(), l, Request{Prompt: "p"}, nil)
	if !strings.Contains(res.Output, "\x1b[") || !strings.Contains(res.Output, "> \x1b[0m") {
		t.Fatalf("raw output with strip_ansi=false stripped anyway: %q", res.Output)
	}
}

func TestRunTruncates(t *testing.T) {
	var logs bytes.Buffer
	l := fake(t, "FAKEQ_BYTES=10000")
	l.MaxResponseSize = 4096
	l.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var streamed int
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, func(b []byte) { streamed += len(b) })
	if err != nil {
		t.Fatal(err)
	}
	body := res.Body()
	if !res.Truncated || res.OriginalSize != 10000 || streamed != 10000 {
		t.Fatalf("truncated %v original %d streamed %d", res.Truncated, res.OriginalSize, streamed)
	}
	// 84-byte lines: the last break before 4096 is at 48*84-1 = 4031, within 100 bytes.
	if len(body) != 4031 || strings.HasSuffix(body, "\n") {
		t.Fatalf("body length %d", len(body))
	}
	want := "\n\n[RESPONSE TRUNCATED: Output exceeded 4.0KB limit. Original: 10000, Truncated: 4031]"
	if res.Notice != want || !strings.HasSuffix(res.Output, want) {
		t.Fatalf("notice %q", res.Notice)
	}
	for _, w := range []string{"level=WARN msg=\"agent response truncated\"", "level=DEBUG msg=\"agent command line\"", "level=INFO msg=\"running agent\""} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %s:\n%s", w, logs.String())
		}
	}
}

func TestCutPoint(t *testing.T) {
	cases := []struct {
		text string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"line one\nline two", 8},
		{"line one\r\nline two", 8},
		{strings.Repeat("x", 200) + "\n" + strings.Repeat("y", 150), 351}, // break too far back
		{"ab\xe2\x82", 2},     // "€" cut after two of its three bytes
		{"ab\xe2\x82\xac", 5}, // whole "€"
		{"ab\xf0\x9f\x98", 2}, // 4-byte emoji cut short
		{"\xe2\x82", 0},       // nothing whole
	}
	for _, c := range cases {
		if got := CutPoint([]byte(c.text)); got != c.want {
			t.Errorf("CutPoint(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func FuzzCutPoint(f *testing.F) {
	f.Add([]byte("hello\nworld"))
	f.Add([]byte("ab\xe2\x82"))
	f.Fuzz(func(t *testing.T, text []byte) {
		cut := CutPoint(text)
		if cut < 0 || cut > len(text) {
			t.Fatalf("cut %d of %d", cut, len(text))
		}
		if cut < len(text)-100 && cut < len(text)-utf8.UTFMax {
			t.Fatalf("cut %d too far back from %d", cut, len(text))
		}
		if utf8.Valid(text[:len(text)-min(len(text), utf8.UTFMax)]) && utf8.Valid(text) && !utf8.Valid(text[:cut]) {
			t.Fatalf("cut %d splits a character in %q", cut, text)
		}
	})
}

func TestRunFailures(t *testing.T) {
	t.Run("exit status", func(t *testing.T) {
		l := fake(t, "FAKEQ_EXIT=3", "FAKEQ_STDERR=boom", "FAKEQ_OUTPUT=partial")
		res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
		if err == nil || !strings.Contains(err.Error(), "exited with status 3: boom") || res.ExitCode != 3 || res.Stderr != "boom" || res.Output != "partial" {
			t.Fatalf("err %v res %+v", err, res)
		}
	})
	t.Run("exit 0 with only stderr", func(t *testing.T) {
		l := fake(t, "FAKEQ_STDERR=error: Amazon Q is having trouble responding right now")
		res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
		var re *ReplyError
		if !errors.As(err, &re) || re.Partial || !strings.Contains(err.Error(), "failed: error: Amazon Q is having trouble") || res.ExitCode != 0 {
			t.Fatalf("err %v res %+v", err, res)
		}
	})
	t.Run("exit 0 with output and stderr is fine", func(t *testing.T) {
		l := fake(t, "FAKEQ_STDERR=welcome banner", "FAKEQ_OUTPUT=answer")
		res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
		if err != nil || res.Stderr != "welcome banner" {
			t.Fatalf("err %v res %+v", err, res)
		}
	})
	t.Run("approval", func(t *testing.T) {
		l := fake(t, "FAKEQ_APPROVAL=1")
		var logs bytes.Buffer
		l.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
		var ut *UntrustedToolError
		if !errors.As(err, &ut) || !ClassifyStderr(res.Stderr).ApprovalRequired || !ClassifyStderr(fakeq.ApprovalError).ApprovalRequired {
			t.Fatalf("err %v stderr %q", err, res.Stderr)
		}
		// A tool to approve is a normal step of an ACP permission round, not an error.
		if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "agent needs a tool approved") {
			t.Fatalf("logs:\n%s", logs.String())
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		for _, cmd := range []string{"qkit-no-such-agent", "/nonexistent/q"} {
			_, err := Run(t.Context(), Limits{Command: cmd}, Request{Prompt: "p"}, nil)
			if err == nil || !strings.Contains(err.Error(), "agent.command") || !strings.Contains(err.Error(), "qkit settings set agent.command") {
				t.Fatalf("%s: %v", cmd, err)
			}
		}
		// agent.command is kiro-cli already: the message does not suggest setting it to kiro-cli.
		_, err := Run(t.Context(), Limits{Command: "kiro-cli-missing/kiro-cli"}, Request{Prompt: "p"}, nil)
		if err == nil || strings.Contains(err.Error(), "agent.command kiro-cli") || !strings.Contains(err.Error(), "install Kiro CLI") {
			t.Fatalf("kiro-cli: %v", err)
		}
	})
}

// manualDeadline counts l's timeout on a clock that moves when the test calls expire, which moves
// it by l.Timeout: a timeout's test waits for the agent to be where it needs it (started, its
// partial reply out), however slow the machine, and sleeps into no real timeout. One run per call.
func manualDeadline(t *testing.T, l *Limits) (expire func()) {
	t.Helper()
	clock := fakeqtest.NewClock()
	l.Clock = clock
	timeout := l.Timeout
	return func() {
		if n := clock.Advance(timeout); n != 1 {
			t.Errorf("moving the clock by the timeout (%v) ended %d runs, not one", timeout, n)
		}
	}
}

// partialThen is an onChunk that calls then once the reply so far is want.
func partialThen(want string, then func()) func([]byte) {
	var got strings.Builder
	return func(b []byte) {
		got.Write(b)
		if got.String() == want {
			then()
		}
	}
}

func TestRunTimeoutReturnsPartialOutput(t *testing.T) {
	l := fake(t, `FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_SLEEP=60s")
	l.Timeout = 5 * time.Second
	expire := manualDeadline(t, &l)
	// The timeout passes once the partial reply has come.
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, partialThen("partial answer\n", func() { expire() }))
	if err != nil {
		t.Fatal(err)
	}
	want := "partial answer\n\n\n[TIMED OUT: the agent hit the configured timeout of 5 seconds (AGENT_TIMEOUT); the output above may be incomplete]"
	if !res.TimedOut || res.Output != want || res.Body() != "partial answer\n" {
		t.Fatalf("result %+v", res)
	}
}

// TestRunDeadline: Limits.Deadline, the end of a run of several prompts, cuts a prompt before its
// own Timeout (the notice still names Timeout), and one whose deadline has passed starts nothing.
func TestRunDeadline(t *testing.T) {
	l := fake(t, `FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_SLEEP=60s")
	clock := fakeqtest.NewClock()
	l.Timeout, l.Deadline, l.Clock = time.Hour, clock.Now().Add(time.Minute), clock
	// The run ends at its Deadline, a minute on, before its Timeout: not a moment sooner.
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, partialThen("partial answer\n", func() {
		if n := clock.Advance(time.Minute - time.Millisecond); n != 0 {
			t.Errorf("the run ended before its Deadline")
		}
		if n := clock.Advance(time.Millisecond); n != 1 {
			t.Errorf("the run did not end at its Deadline")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := "partial answer\n\n\n[TIMED OUT: the agent hit the configured timeout of 3600 seconds (AGENT_TIMEOUT); the output above may be incomplete]"
	if !res.TimedOut || res.Output != want {
		t.Fatalf("result %+v", res)
	}

	dir := t.TempDir()
	l = fake(t, "FAKEQ_RECORD=argv.jsonl", "FAKEQ_OUTPUT=x")
	l.Timeout, l.Deadline = time.Hour, time.Now().Add(-time.Millisecond)
	res, err = Run(t.Context(), l, Request{Prompt: "p", Dir: dir}, nil)
	if err != nil || !res.TimedOut || res.Body() != "" {
		t.Fatalf("result %+v, err %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "argv.jsonl")); err == nil {
		t.Fatal("the agent ran after the run's deadline")
	}
}

// gone waits until pid has exited (a zombie counts: it holds no resources and runs nothing).
func gone(t *testing.T, pid int) {
	t.Helper()
	if err := proctest.WaitGone(pid, 10*time.Second); err != nil {
		t.Fatalf("grandchild: %v", err)
	}
}

// waitFile waits until file exists and is not empty.
func waitFile(t *testing.T, file string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if fi, err := os.Stat(file); err == nil && fi.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", file)
		}
	}
}

func grandchildPID(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestGrandchildGone(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"timeout", []string{"FAKEQ_SLEEP=60s"}},
		{"cancel", []string{"FAKEQ_SLEEP=60s", "FAKEQ_OUTPUT=x"}},
		{"normal exit", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			l := fake(t, append(c.env, "FAKEQ_GRANDCHILD="+pidFile, "FAKEQ_OUTPUT=out")...)
			expire := manualDeadline(t, &l)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			var res Result
			go func() { defer close(done); res, _ = Run(ctx, l, Request{Prompt: "p"}, nil) }()
			// The timeout passes, or the run is cancelled, once the grandchild runs (its pid
			// written), not after a guessed delay.
			switch c.name {
			case "timeout":
				waitFile(t, pidFile)
				expire()
			case "cancel":
				waitFile(t, pidFile)
				cancel()
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run still waiting for the grandchild's pipes")
			}
			gone(t, grandchildPID(t, pidFile))
			if c.name == "timeout" && !res.TimedOut {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestRunConcurrent runs several agents at once: runs share nothing.
func TestRunConcurrent(t *testing.T) {
	l := fake(t, "FAKEQ_ECHO_PROMPT=1")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := "prompt " + strconv.Itoa(i)
			res, err := Run(context.Background(), l, Request{Prompt: p}, nil)
			if err != nil || res.Output != p+"\n" {
				t.Errorf("%s: %v %q", p, err, res.Output)
			}
		}()
	}
	wg.Wait()
}

func TestLimitsFromConfigDefaults(t *testing.T) {
	c, err := config.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) {
		if k == "QKIT_HOME" {
			return t.TempDir(), true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := LimitsFromConfig(c)
	if l.Command != "q" || l.Timeout != 180*time.Second || l.MaxResponseSize != 2<<20 || !l.StripANSI || l.RawOutput ||
		l.DefaultModel != "" || len(l.Models) != 0 {
		t.Fatalf("defaults %+v", l)
	}
	c, err = config.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) {
		v, ok := map[string]string{"QKIT_HOME": t.TempDir(), "AGENT_TIMEOUT": "30", "AGENT_MAX_RESPONSE_SIZE": "4096"}[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	if l := LimitsFromConfig(c); l.Timeout != 30*time.Second || l.MaxResponseSize != 4096 {
		t.Fatalf("from AGENT_TIMEOUT and AGENT_MAX_RESPONSE_SIZE: %+v", l)
	}
}

func TestRunLogsFailures(t *testing.T) {
	var logs bytes.Buffer
	l := fake(t, "FAKEQ_EXIT=2", "FAKEQ_STDERR=boom")
	l.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Run(t.Context(), l, Request{Prompt: "p"}, nil); err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="agent failed" exit_code=2`) || !strings.Contains(logs.String(), "stderr=boom") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// A prompt the system refuses as an argument (E2BIG where Validate cannot check up front) is
// reported as too long, not as an agent that cannot start.
func TestStartErrorTooLong(t *testing.T) {
	err := startError("q", &os.PathError{Op: "fork/exec", Path: "/usr/bin/q", Err: syscall.E2BIG})
	if !strings.Contains(err.Error(), "the prompt is too long for the agent") || strings.Contains(err.Error(), "could not start") {
		t.Fatal(err)
	}
}

// TestRunKeepsCallersPermissions: the agent runs as the caller, with the caller's
// user and group and no privilege change, so the file system's permissions apply to what it does.
func TestRunKeepsCallersPermissions(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "read-only")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent")
	body := "#!/bin/sh\nid -u\nid -g\nif : 2>/dev/null > \"$AGENT_RO/file\"; then echo wrote; else echo denied; fi\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENT_RO", ro)
	res, err := Run(t.Context(), Limits{Command: script, Timeout: time.Minute}, Request{Prompt: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(res.Output)
	if len(lines) != 3 || lines[0] != strconv.Itoa(os.Getuid()) || lines[1] != strconv.Itoa(os.Getgid()) {
		t.Fatalf("agent ran as %q, caller is uid %d gid %d", lines, os.Getuid(), os.Getgid())
	}
	if os.Getuid() != 0 && lines[2] != "denied" { // root passes every permission check
		t.Fatalf("the agent wrote into a read-only directory: %q", lines)
	}
}

// TestRunFinishedInTimeIsNotTimedOut: an agent that exits before its timeout, leaving a helper that
// holds stdout and outlives SIGTERM, is not reported as timed out although the sweep of its process
// group ends after the deadline.
func TestRunFinishedInTimeIsNotTimedOut(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent")
	// The helper is ready (its SIGTERM trap set) before the agent exits. The sweep's SIGTERM, which
	// comes only once the agent has exited, leaves it running: it writes .swept and holds stdout
	// until the test writes .release.
	body := "#!/bin/sh\necho reply\n" +
		"sh -c 'trap \"echo > \\\"\\$0.swept\\\"\" TERM; : > \"$0.ready\"; while [ ! -e \"$0.release\" ]; do sleep 0.01; done' \"$0\" &\n" +
		"while [ ! -e \"$0.ready\" ]; do sleep 0.01; done\nexit 0\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	// The grace is long: only the helper's end, after the deadline, ends the sweep.
	l := Limits{Command: script, Timeout: time.Minute, Grace: time.Minute}
	expire := manualDeadline(t, &l)
	done := make(chan struct{})
	var res Result
	var err error
	go func() { defer close(done); res, err = Run(t.Context(), l, Request{Prompt: "p"}, nil) }()
	waitFile(t, script+".swept")
	expire() // the deadline passes during the sweep
	if err := os.WriteFile(script+".release", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || res.TimedOut || res.Output != "reply\n" {
		t.Fatalf("err %v, result %+v", err, res)
	}
}
