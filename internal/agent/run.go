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
	"syscall"
	"time"
)

// stderrKeep is how much of the agent's stderr is kept (the end of it, where errors are).
const stderrKeep = 64 << 10

// Run runs the agent for r under l. onChunk, when not nil, receives the (ANSI-stripped) stdout as
// it arrives, all of it, in order, from one goroutine; it must not keep the slice.
//
// A run that hits l.Timeout is not an error: Result.TimedOut is set and the partial output is
// returned with a notice. err is non-nil when the request is invalid (nothing ran), the agent could
// not start (the message names agent.command), the agent failed (non-zero exit, or exit 0 with no
// output and something on stderr; the message carries its stderr), or ctx was cancelled (err wraps
// ctx.Err()). Result is filled in every case.
func Run(ctx context.Context, l Limits, r Request, onChunk func([]byte)) (Result, error) {
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := Result{ExitCode: -1, Argv: Argv(l, r)}
	if err := Validate(l, r); err != nil {
		return res, err
	}
	start := time.Now()

	runCtx := ctx
	if l.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, l.Timeout)
		defer cancel()
	}

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
	stdoutDone := make(chan struct{})
	go func() {
		defer close(stdoutDone)
		readStdout(outR, l.StripANSI, kept, onChunk)
	}()
	tail := &tailBuffer{max: stderrKeep}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(tail, errR)
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
	case <-runCtx.Done():
		stopped = true
		log.Warn("stopping agent", "reason", context.Cause(runCtx), "pgid", pgid)
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
	log.Info("agent finished", "exit_code", res.ExitCode, "output_bytes", kept.total, "stderr_bytes", tail.total, "duration", res.Duration)

	switch {
	case stopped && ctx.Err() != nil:
		return res, fmt.Errorf("agent run cancelled: %w", ctx.Err())
	case timedOut:
		return res, nil
	case waitErr != nil || res.ExitCode != 0:
		err := fmt.Errorf("%s exited with status %d%s", l.Command, res.ExitCode, stderrSuffix(res.Stderr))
		log.Error("agent failed", "exit_code", res.ExitCode, "stderr", res.Stderr)
		return res, err
	case strings.TrimSpace(string(body)) == "" && strings.TrimSpace(res.Stderr) != "":
		err := fmt.Errorf("%s printed no reply and reported an error%s", l.Command, stderrSuffix(res.Stderr))
		log.Error("agent failed with exit status 0", "stderr", res.Stderr)
		return res, err
	}
	return res, nil
}

func readStdout(r io.Reader, strip bool, kept *keeper, onChunk func([]byte)) {
	buf := make([]byte, 32<<10)
	var clean []byte
	var s stripper
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if strip {
				clean = s.Strip(clean[:0], chunk)
				chunk = clean
			}
			if len(chunk) > 0 {
				kept.Write(chunk)
				if onChunk != nil {
					onChunk(chunk)
				}
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
		return fmt.Errorf("agent command %q not found: install the Amazon Q Developer CLI (or Kiro CLI), or set agent.command "+
			"to the binary to run (qkit settings set agent.command kiro-cli, or QKIT_AGENT_COMMAND=/path/to/q)", command)
	}
	return fmt.Errorf("agent command %q (agent.command) could not start: %w", command, err)
}

func stderrSuffix(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	return ": " + s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}
