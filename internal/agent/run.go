package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stderrKeep is how much of the agent's stderr is kept (the end of it, where errors are).
const stderrKeep = 64 << 10

// Run runs the agent for r under l and returns its reply. onChunk, when not nil, receives the
// reply as it arrives (EventMessage texts: see Stream), all of it, in order, from one goroutine; it
// must not keep the slice.
func Run(ctx context.Context, l Limits, r Request, onChunk func([]byte)) (Result, error) {
	var onEvent func(Event)
	if onChunk != nil {
		onEvent = func(e Event) {
			if e.Type == EventMessage {
				onChunk([]byte(e.Text))
			}
		}
	}
	return Stream(ctx, l, r, onEvent)
}

// Stream runs the agent for r under l. onEvent, when not nil, receives the run's events as they
// happen, from one goroutine: EventMessage with the reply text (without the "> " response prefix,
// tool banners and their description blocks, unless l.RawOutput), EventToolCall for each tool
// banner (Name, Server, Trusted; Status pending for an untrusted tool, in_progress for a trusted
// one) and EventToolCallUpdate when it ends (completed, or failed; Denied when the agent refused
// it). The tools, in their final state, are also in Result.Tools.
//
// A run that hits l.Timeout is not an error: Result.TimedOut is set and the partial output is
// returned with a notice. err is non-nil when the request is invalid (nothing ran), the agent could
// not start (*MissingCommandError, or a message naming agent.command), the agent failed (non-zero
// exit; exit 0 with no reply and something on stderr), or ctx was cancelled (err wraps ctx.Err()).
// Failures the agent reports while exiting 0 are errors too: a tool it refused
// (*UntrustedToolError, Denied), an unknown --agent (*AgentNotFoundError), a login it lacks
// (*LoginError: kiro-cli's device-login flow, which would wait forever, is stopped as soon as it
// starts) and an error on stderr after a partial reply (*ReplyError). q's approval error is an
// *UntrustedToolError unless the tool was trusted already (its stream-failure quirk). Result is
// filled in every case, with whatever reply came before a failure.
func Stream(ctx context.Context, l Limits, r Request, onEvent func(Event)) (Result, error) {
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := Result{ExitCode: -1, Argv: Argv(l, r)}
	if err := ValidateChat(l, r); err != nil {
		return res, err
	}
	start := time.Now()

	runCtx := ctx
	if l.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, l.Timeout)
		defer cancel()
	}
	// loginCtx is cancelled when stderr shows kiro-cli's device-login flow, which waits forever.
	loginCtx, stopForLogin := context.WithCancelCause(runCtx)
	defer stopForLogin(nil)

	outR, outW, err := os.Pipe()
	if err != nil {
		return res, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return res, err
	}
	cmd := exec.Command(res.Argv[0], res.Argv[1:]...)
	cmd.Dir = r.Dir
	cmd.Stdin = nil // /dev/null: the agent never waits for input
	var inW *os.File
	if PromptOnStdin(r) {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return res, err
		}
		cmd.Stdin = inR
		defer inW.Close() // unblocks a write the agent never reads, once the run is over
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	newGroup(cmd)
	log.Info("running agent", "command", res.Argv[0], "dir", r.Dir, "timeout", l.Timeout, "max_response_size", l.MaxResponseSize)
	log.Debug("agent command line", "argv", res.Argv)
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if f, ok := cmd.Stdin.(*os.File); ok {
		f.Close()
	}
	if err == nil && inW != nil {
		go func() {
			// The prompt, then end of input. An agent that exits without reading it makes the
			// write fail, which is fine: the run's result says what happened.
			_, _ = io.WriteString(inW, r.Prompt)
			_ = inW.Close()
		}()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		err = startError(l.Command, err)
		log.Error("agent did not start", "error", err)
		return res, err
	}
	pgid := cmd.Process.Pid

	kept := &keeper{limit: l.MaxResponseSize}
	parser := newTextParser(l.RawOutput, func(e Event) {
		if e.Type == EventMessage {
			kept.WriteString(e.Text)
		}
		if onEvent != nil {
			onEvent(e)
		}
	})
	var printed atomic.Bool // the agent has written to stdout
	stdoutDone := make(chan struct{})
	go func() {
		defer close(stdoutDone)
		readStdout(outR, l.RawOutput && !l.StripANSI, parser, &printed)
	}()
	// An agent silent for a while may be waiting for a login nobody can give (kiro-cli's device
	// login, if it says nothing): then, and only then, whoami is asked.
	probe := StartLoginProbe(loginCtx, l, nil, printed.Load, func() { stopForLogin(errLoginFlow) })
	defer probe.Stop()
	tail := NewTailBuffer(stderrKeep)
	watch := &loginWatch{found: func() { stopForLogin(errLoginFlow) }}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(io.MultiWriter(tail, watch), errR)
	}()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	grace := l.Grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	var waitErr error
	stopped := false // the run was stopped (timeout or cancel), rather than the agent exiting
	select {
	case waitErr = <-waitDone:
	case <-loginCtx.Done():
		stopped = true
		log.Warn("stopping agent", "reason", context.Cause(loginCtx), "pgid", pgid)
		waitErr = stopGroup(pgid, grace, waitDone)
	}
	// The agent has exited. Anything left in its process group (a helper it started) goes too: it
	// would hold the pipes open, and nothing may outlive the run.
	sweep(pgid, grace, stdoutDone, stderrDone)
	outR.Close() // wakes a reader still blocked on a pipe held by an escaped process
	errR.Close()
	<-stdoutDone
	<-stderrDone

	res.Duration = time.Since(start)
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Stderr = tail.String()
	report := ClassifyStderr(res.Stderr)
	parser.close(!stopped && waitErr == nil && res.ExitCode == 0 && !report.Failed())
	res.Tools = parser.tools
	res.OriginalSize = kept.total
	body := kept.body()
	var notice strings.Builder
	if kept.truncated() {
		res.Truncated = true
		notice.WriteString(truncationNotice(l.MaxResponseSize, kept.total, len(body)))
		log.Warn("agent response truncated", "original_bytes", kept.total, "kept_bytes", len(body), "limit", l.MaxResponseSize)
	}
	// Only a run the deadline stopped timed out: the sweep after an agent that exited in time may
	// outlast the deadline without making its reply partial.
	timedOut := stopped && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if timedOut {
		res.TimedOut = true
		notice.WriteString(timeoutNotice(l.Timeout))
		log.Warn("agent timed out", "timeout", l.Timeout, "output_bytes", kept.total)
	}
	res.Notice = notice.String()
	res.Output = string(body) + res.Notice
	log.Info("agent finished", "exit_code", res.ExitCode, "output_bytes", kept.total, "stderr_bytes", tail.Total(), "duration", res.Duration)

	if stopped && ctx.Err() != nil {
		return res, fmt.Errorf("agent run cancelled: %w", ctx.Err())
	}
	if stopped && context.Cause(loginCtx) == errLoginFlow {
		err := &LoginError{Command: l.Command, Detail: "it started a device login, which waits for a browser; qkit stopped it"}
		if le := probe.Found(); le != nil {
			err = le
		}
		log.Error("agent failed", "error", err)
		return res, err
	}
	if timedOut {
		return res, nil
	}
	if err := failure(l, r, res, waitErr, report, strings.TrimSpace(string(body)) != ""); err != nil {
		var untrusted *UntrustedToolError
		if errors.As(err, &untrusted) {
			// A tool that needs approval is a normal event (an ACP editor asks the person and
			// runs again), not an error of the agent's.
			log.Info("agent needs a tool approved", "exit_code", res.ExitCode, "tools", untrusted.TrustNames())
		} else {
			log.Error("agent failed", "exit_code", res.ExitCode, "error", err, "stderr", res.Stderr)
		}
		return res, err
	}
	return res, nil
}

// errLoginFlow is why a run was stopped when the agent started its device login.
var errLoginFlow = errors.New("the agent started a device login")

// failure says how a run that ended on its own failed, or nil when it did not.
func failure(l Limits, r Request, res Result, waitErr error, report StderrReport, replied bool) error {
	var untrusted []ToolCall
	for _, t := range res.Tools {
		if !t.Trusted {
			untrusted = append(untrusted, t)
		}
	}
	exited := waitErr != nil || res.ExitCode != 0
	switch {
	case exited && report.ApprovalRequired:
		// q stops at the first untrusted tool. Its approval error after a trusted tool (or after
		// "having trouble responding") is a stream failure in disguise: no tool to approve.
		last := len(res.Tools) - 1
		if report.TroubleResponding || (last >= 0 && res.Tools[last].Trusted) {
			return fmt.Errorf("%s failed: %s (q reports a stream failure after a tool has run as a tool approval error; "+
				"the tool was trusted, so this is not about approval)", commandName(l.Command), report.Summary())
		}
		if last < 0 {
			untrusted = []ToolCall{{}}
		} else {
			untrusted = res.Tools[last:]
		}
		return &UntrustedToolError{Command: l.Command, Tools: untrusted, Message: report.Summary(), Bare: bare(untrusted, r), Trusted: r.TrustTools}
	case r.Agent != "" && (report.UnknownAgent != "" || (exited && res.ExitCode == 4)):
		return &AgentNotFoundError{Command: l.Command, Agent: r.Agent}
	case report.NotLoggedIn || report.AuthFailed:
		return &LoginError{Command: l.Command, Detail: report.Summary()}
	case exited:
		return fmt.Errorf("%s exited with status %d%s", l.Command, res.ExitCode, StderrSuffix(res.Stderr))
	case len(report.Errors) > 0:
		return &ReplyError{Command: l.Command, Message: report.Summary(), Partial: replied}
	case len(untrusted) > 0:
		return &UntrustedToolError{Command: l.Command, Tools: untrusted, Denied: true, Bare: bare(untrusted, r), Trusted: r.TrustTools}
	case !replied && strings.TrimSpace(res.Stderr) != "":
		// No reply and no known failure: the end of stderr is the best account there is (the
		// welcome text it always prints comes first, and is left out).
		return fmt.Errorf("%s printed no reply%s", l.Command, StderrSuffix(lastLines(res.Stderr, 3)))
	}
	return nil
}

// lastLines returns the last n non-blank lines of s, ANSI-stripped.
func lastLines(s string, n int) string {
	var st stripper
	var lines []string
	for line := range strings.Lines(string(st.Strip(nil, []byte(s)))) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// bare returns the MCP tools of tools that r trusted by their bare name.
func bare(tools []ToolCall, r Request) []ToolCall {
	var out []ToolCall
	trusted := cleanList(r.TrustTools)
	for _, t := range tools {
		if t.Server != "" && contains(trusted, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// loginWatch looks at stderr, line by line, for the start of a device login.
type loginWatch struct {
	line  []byte
	found func()
	done  bool
}

func (w *loginWatch) Write(p []byte) (int, error) {
	if w.done {
		return len(p), nil
	}
	for _, b := range p {
		if b != '\n' {
			if len(w.line) < 4096 {
				w.line = append(w.line, b)
			}
			continue
		}
		if deviceLoginRe().Match(w.line) {
			w.done = true
			w.found()
			return len(p), nil
		}
		w.line = w.line[:0]
	}
	return len(p), nil
}

// DefaultLoginProbeAfter is how long an agent may print nothing before qkit asks whoami whether it
// is waiting for a login (Limits.LoginProbeAfter).
const DefaultLoginProbeAfter = 5 * time.Second

func after(l Limits) time.Duration {
	if l.LoginProbeAfter > 0 {
		return l.LoginProbeAfter
	}
	return DefaultLoginProbeAfter
}

// readStdout feeds the agent's stdout to the parser, which reads it ANSI-stripped; keepANSI gives
// a raw parser the text as printed. printed is set at the first byte.
func readStdout(r io.Reader, keepANSI bool, p *textParser, printed *atomic.Bool) {
	buf := make([]byte, 32<<10)
	var clean []byte
	var s stripper
	for {
		n, err := r.Read(buf)
		if n > 0 {
			printed.Store(true)
			clean = s.Strip(clean[:0], buf[:n])
			printed := clean
			if keepANSI {
				printed = buf[:n]
			}
			if len(printed) > 0 || len(clean) > 0 {
				p.write(printed, clean)
			}
		}
		if err != nil {
			return
		}
	}
}

// stopGroup signals the process group SIGTERM and, if the agent has not exited after grace,
// SIGKILL. It returns the agent's Wait error.
func stopGroup(pgid int, grace time.Duration, waitDone <-chan error) error {
	signalGroup(pgid, false)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-waitDone:
		return err
	case <-t.C:
		signalGroup(pgid, true)
		return <-waitDone
	}
}

// sweep ends what is left of the process group once the agent has exited, then waits for the
// output readers: at once if the pipes closed, after SIGTERM (and SIGKILL after grace) if something
// still held them. A process that left the group and kept a pipe is cut off by closing our ends.
func sweep(pgid int, grace time.Duration, done ...<-chan struct{}) {
	allDone := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		for _, c := range done {
			select {
			case <-c:
			case <-t.C:
				return false
			}
		}
		return true
	}
	if !groupSweep {
		allDone(grace)
		return
	}
	signalGroup(pgid, false)
	if allDone(grace) {
		signalGroup(pgid, true)
		return
	}
	signalGroup(pgid, true)
	allDone(grace)
}

func startError(command string, err error) error {
	if errors.Is(err, syscall.E2BIG) {
		return fmt.Errorf("the prompt is too long for the agent (%w): shorten it (for qkit ask the context files count too: "+
			"see qkit context show, or use --no-context)", err)
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return &MissingCommandError{Command: command}
	}
	return fmt.Errorf("agent command %q (agent.command) could not start: %w", command, err)
}

// query runs `command args...` for one of the agent's quick answers (whoami, the model list),
// within timeout: its stdout, stderr and exit code. err is set only when it gave no answer: a
// missing command (*MissingCommandError), one that could not start, or no answer in time (what
// names the question in that message).
func query(ctx context.Context, command, what string, timeout time.Duration, args ...string) (stdout, stderr string, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, command, args...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	c.WaitDelay = time.Second
	err = c.Run()
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return "", "", -1, &MissingCommandError{Command: command}
	case ctx.Err() != nil:
		return "", "", -1, fmt.Errorf("%s %s did not answer within %s", commandName(command), what, timeout)
	case err != nil && !errors.As(err, &ee):
		return "", "", -1, startError(command, err)
	}
	return out.String(), errOut.String(), c.ProcessState.ExitCode(), nil
}

// StderrSuffix is ": " and the agent's stderr, made Printable and trimmed, for the end of an error
// message; "" when it printed nothing.
func StderrSuffix(stderr string) string {
	s := strings.TrimSpace(Printable(stderr))
	if s == "" {
		return ""
	}
	return ": " + s
}

// TailBuffer keeps the last max bytes written to it (the agent's stderr) and counts them all. It
// is safe for concurrent use.
type TailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

// NewTailBuffer keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String is what is kept.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// Total is the size of everything written.
func (t *TailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
