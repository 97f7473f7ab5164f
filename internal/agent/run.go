package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/qkit-cli/qkit/internal/procgroup"
	"github.com/qkit-cli/qkit/internal/termtext"
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
		now := l.now()
		end := now.Add(l.Timeout)
		if !l.Deadline.IsZero() && l.Deadline.Before(end) {
			end = l.Deadline // the run's other prompts took the rest
		}
		if !end.After(now) {
			res.TimedOut, res.Notice = true, timeoutNotice(l.Timeout)
			res.Output = res.Notice
			log.Warn("agent not started: the run's timeout has passed", "timeout", l.Timeout)
			return res, nil
		}
		var cancel context.CancelFunc
		runCtx, cancel = l.runContext(ctx, now, end)
		defer cancel()
	}
	// loginCtx is cancelled when stderr shows kiro-cli's device-login flow, which waits forever.
	loginCtx, stopForLogin := context.WithCancelCause(runCtx)
	defer stopForLogin(nil)

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
	tail := NewTailBuffer(stderrKeep)
	watch := &loginWatch{found: func() { stopForLogin(errLoginFlow) }}
	log.Info("running agent", "command", res.Argv[0], "dir", r.Dir, "timeout", l.Timeout, "max_response_size", l.MaxResponseSize)
	log.Debug("agent command line", "argv", res.Argv)
	proc, err := procgroup.Start(res.Argv[0], res.Argv[1:], procgroup.Options{
		Dir:       r.Dir,
		StdinPipe: PromptOnStdin(r), // otherwise the null device: the agent never waits for input
		Stdout:    func(out io.Reader) { readStdout(out, l.RawText(), parser, &printed) },
		Stderr:    procgroup.Copy(io.MultiWriter(tail, watch)),
		Grace:     l.Grace,
	})
	if err != nil {
		err = startError(l.Command, err)
		log.Error("agent did not start", "error", err)
		return res, err
	}
	if in := proc.Stdin(); in != nil {
		go func() {
			// The prompt, then end of input. An agent that exits without reading it makes the
			// write fail (Wait closes the pipe), which is fine: the run's result says what happened.
			_, _ = io.WriteString(in, r.Prompt)
			_ = in.Close()
		}()
	}
	// An agent silent for a while may be waiting for a login nobody can give (kiro-cli's device
	// login, if it says nothing): then, and only then, whoami is asked.
	probe := StartLoginProbe(loginCtx, l, nil, printed.Load, func() { stopForLogin(errLoginFlow) })
	defer probe.Stop()

	select {
	case <-proc.Exited():
		if proc.Stopping() && loginCtx.Err() == nil {
			// qkit itself is stopping (procgroup.Shutdown), which ended the group before the
			// run's context.
			log.Warn("stopping agent", "reason", procgroup.ErrShutdown, "pgid", proc.Pid())
		}
	case <-loginCtx.Done():
		log.Warn("stopping agent", "reason", context.Cause(loginCtx), "pgid", proc.Pid())
	}
	// Once the agent has exited, anything left in its process group (a helper it started) goes
	// too: it would hold the pipes open, and nothing may outlive the run.
	exit := proc.Wait(loginCtx)
	stopped := exit.Stopped // the run was stopped (timeout or cancel), rather than the agent exiting

	res.Duration = time.Since(start)
	res.ExitCode = exit.Code
	res.Stderr = tail.String()
	report := ClassifyStderr(res.Stderr)
	parser.close(!stopped && res.ExitCode == 0 && !report.Failed())
	res.Tools = parser.tools
	// Only a run the deadline stopped timed out: the sweep after an agent that exited in time may
	// outlast the deadline without making its reply partial.
	var timeout time.Duration
	if stopped && errors.Is(context.Cause(runCtx), context.DeadlineExceeded) && ctx.Err() == nil {
		timeout = l.Timeout
	}
	kept.finish(&res, l.MaxResponseSize, timeout, log)
	log.Info("agent finished", "exit_code", res.ExitCode, "output_bytes", kept.total, "stderr_bytes", tail.Total(), "duration", res.Duration)

	if stopped && ctx.Err() != nil {
		return res, fmt.Errorf("agent run cancelled: %w", ctx.Err())
	}
	if stopped && errors.Is(exit.Cause, procgroup.ErrShutdown) {
		// qkit is stopping: its stop signal ends every group just before the run's context.
		return res, fmt.Errorf("agent run cancelled: %w", context.Canceled)
	}
	if stopped && context.Cause(loginCtx) == errLoginFlow {
		err := &LoginError{Command: l.Command, Detail: "it started a device login, which waits for a browser; qkit stopped it"}
		if le := probe.Found(); le != nil {
			err = le
		}
		log.Error("agent failed", "error", err)
		return res, err
	}
	if res.TimedOut {
		return res, nil
	}
	if err := failure(l, r, res, exit, report, strings.TrimSpace(res.Body()) != ""); err != nil {
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

// failure says how a run that ended on its own (as exit) failed, or nil when it did not.
func failure(l Limits, r Request, res Result, exit procgroup.Exit, report StderrReport, replied bool) error {
	var untrusted []ToolCall
	for _, t := range res.Tools {
		if !t.Trusted {
			untrusted = append(untrusted, t)
		}
	}
	exited := res.ExitCode != 0 // -1 when a signal ended it
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
		return fmt.Errorf("%s %s%s", l.Command, exit.Ended(), StderrSuffix(res.Stderr))
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
	var lines []string
	for line := range strings.Lines(termtext.StripString(s)) {
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

// readStdout feeds the agent's stdout to the parser, which reads it through the terminal-safe
// filter (termtext.Stripper); raw gives a raw parser the text as printed (Limits.RawText). printed
// is set at the first byte.
func readStdout(r io.Reader, raw bool, p *textParser, printed *atomic.Bool) {
	buf := make([]byte, 32<<10)
	var clean []byte
	s := termtext.Stripper{KeepCR: true} // the parser finds q's spinner frames by them, then drops the rest
	for {
		n, err := r.Read(buf)
		if n > 0 {
			printed.Store(true)
			p.rawBytes(buf[:n])
			clean = s.Strip(clean[:0], buf[:n])
			printed := clean
			if raw {
				printed = buf[:n]
			}
			if len(printed) > 0 || len(clean) > 0 {
				p.write(printed, clean)
			}
		}
		if err != nil {
			// A character the agent left incomplete at the end shows as U+FFFD.
			if clean = s.Flush(clean[:0]); len(clean) > 0 && !raw {
				p.write(clean, clean)
			}
			return
		}
	}
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
// within timeout, in a process group of its own: its stdout, stderr and how it ended. err is set
// only when it gave no answer: a missing command (*MissingCommandError), one that could not start,
// no answer in time (what names the question in that message), or ctx ended, which stops the
// whole group and is no failure of the agent's: err then wraps context.Cause(ctx) (errors.Is
// context.Canceled for a cancel or an interrupt).
func query(ctx context.Context, command, what string, timeout time.Duration, args ...string) (stdout, stderr string, exit procgroup.Exit, err error) {
	return queryIn(ctx, nil, command, what, timeout, args...)
}

// queryIn is query with the process's environment env (nil: qkit's own).
func queryIn(ctx context.Context, env []string, command, what string, timeout time.Duration, args ...string) (stdout, stderr string, exit procgroup.Exit, err error) {
	qctx, cancel := context.WithTimeoutCause(ctx, timeout, errNoAnswer)
	defer cancel()
	var out, errOut strings.Builder // read once Wait has returned, when their writers have
	p, err := procgroup.Start(command, args, procgroup.Options{Env: env, Stdout: procgroup.Copy(&out), Stderr: procgroup.Copy(&errOut), Grace: time.Second})
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return "", "", procgroup.Exit{Code: -1}, &MissingCommandError{Command: command}
	case err != nil:
		return "", "", procgroup.Exit{Code: -1}, startError(command, err)
	}
	exit = p.Wait(qctx)
	switch {
	case exit.Stopped && errors.Is(exit.Cause, errNoAnswer):
		return "", "", exit, fmt.Errorf("%s %s did not answer within %s", commandName(command), what, timeout)
	case exit.Stopped:
		return "", "", exit, fmt.Errorf("%s %s was stopped: %w", commandName(command), what, exit.Cause)
	}
	return out.String(), errOut.String(), exit, nil
}

// errNoAnswer is why a query that took too long was stopped.
var errNoAnswer = errors.New("no answer in time")

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
