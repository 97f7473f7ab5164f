// Package procgroup runs every process qkit starts (the agent's chat run and its quick queries,
// the ACP agent, the terminals it asks for, the MCP servers qkit bridges) the same way: in a
// process group of its own, with its output read by goroutines this package owns, and stopped as
// one group.
//
// Stopping is SIGTERM to the group, then SIGKILL after a grace. Once the leader has exited, for
// whatever reason, what is left of its group (a helper it started) is swept the same way: nothing
// may outlive the process, and a helper would hold its pipes open. A process that left the group
// (setsid) and still holds a pipe cannot hang the caller either: the readers get a bounded drain,
// then their ends of the pipes are closed. Exit says how the process ended (an exit status, or the
// name of the signal, "SIGTERM") and whether qkit stopped it.
//
// When qkit itself is told to stop (a stop signal, or the end of a server's input), Shutdown ends
// every group still running at once: SIGTERM now, SIGKILL after ShutdownGrace, whatever gentler
// path (closing an agent's stdin and waiting) the code that started it would take; that path
// then finds the process gone. On Linux each leader also gets SIGKILL from the kernel when the
// thread that started it ends, which happens when qkit dies, even by SIGKILL (see newGroup).
//
// On Windows the group is a new process group and both stop steps end the process tree at once
// (taskkill /T /F); a tree whose leader has exited cannot be found any more, so there is no sweep.
package procgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is Options.Grace when it is 0.
const DefaultGrace = 2 * time.Second

// ShutdownGrace is how long a group has between SIGTERM and SIGKILL once Shutdown was called, and
// each step of the drain after it: qkit must be gone well inside the 2 s an MCP client waits
// between SIGTERM and SIGKILL, with every process it started.
const ShutdownGrace = 500 * time.Millisecond

// ErrStopped is Exit.Cause of a process ended by Stop.
var ErrStopped = errors.New("stopped")

// ErrShutdown is Exit.Cause of a process Shutdown ended (unless its own Wait or Stop came with a
// cause of its own before it had exited).
var ErrShutdown = errors.New("qkit is stopping")

// Options say how to start a command.
type Options struct {
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env is the environment; nil means the caller's.
	Env []string
	// StdinPipe gives the command a pipe as its stdin, written through Proc.Stdin; without it the
	// command reads the null device.
	StdinPipe bool
	// Stdout and Stderr read the command's output, each in a goroutine of its own. Each must return
	// once a Read fails: the pipe is closed under it when the drain ends. nil sends the output to
	// the null device.
	Stdout, Stderr func(io.Reader)
	// MergeStderr sends stderr into the stdout pipe, in the order the command wrote them (Stderr
	// is then unused).
	MergeStderr bool
	// Grace is how long the group has between SIGTERM and SIGKILL, and each step of the drain;
	// 0 means DefaultGrace.
	Grace time.Duration
}

// Proc is a started command, the leader of its own process group.
type Proc struct {
	cmd         *exec.Cmd
	grace       time.Duration // see graceNow
	stdin       *os.File
	outs        []*os.File    // our ends of the output pipes
	exited      chan struct{} // closed once the leader has exited and been waited for
	readersDone chan struct{} // closed once every output reader has returned

	stopOnce sync.Once
	mu       sync.Mutex
	stopped  bool
	cause    error
	hurried  bool // Shutdown was called while it ran: graces are ShutdownGrace at most

	finishOnce sync.Once
	exit       Exit
}

// Exit is how a process ended.
type Exit struct {
	// Code is its exit status; -1 when a signal ended it (or it never ran).
	Code int
	// Signal is the name of the signal that ended it ("SIGTERM", "SIGKILL"); "" when it exited.
	Signal string
	// Stopped is set when qkit stopped it (Stop, or the end of Wait's context) before it ended on
	// its own: its end is then qkit's doing, not a failure of the process.
	Stopped bool
	// Cause is why it was stopped: the cause of Wait's context (context.Canceled,
	// context.DeadlineExceeded or the caller's own), or ErrStopped; nil when it was not.
	Cause error
}

// String says how the process ended: "exit status 3", "terminated by SIGTERM".
func (e Exit) String() string {
	if e.Signal != "" {
		return "terminated by " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Ended says it as a verb, to follow the process's name: "exited with status 3", "was terminated
// by SIGTERM".
func (e Exit) Ended() string {
	if e.Signal != "" {
		return "was terminated by " + e.Signal
	}
	return fmt.Sprintf("exited with status %d", e.Code)
}

// Start starts name with args as the leader of a new process group. The error is exec's (a
// missing command wraps exec.ErrNotFound or fs.ErrNotExist); nothing is left running then.
func Start(name string, args []string, o Options) (*Proc, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = o.Dir, o.Env
	newGroup(cmd)
	p := &Proc{cmd: cmd, grace: o.Grace, exited: make(chan struct{}), readersDone: make(chan struct{})}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	var theirs []*os.File // the ends the command gets, closed here once it has them
	type reader struct {
		f    *os.File
		read func(io.Reader)
	}
	var readers []reader
	fail := func(err error) (*Proc, error) {
		closeAll(theirs)
		closeAll(p.outs)
		if p.stdin != nil {
			p.stdin.Close()
		}
		return nil, err
	}
	if o.StdinPipe {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		theirs, p.stdin, cmd.Stdin = append(theirs, r), w, r
	}
	output := func(read func(io.Reader)) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		theirs, p.outs = append(theirs, w), append(p.outs, r)
		readers = append(readers, reader{r, read})
		return w, nil
	}
	if o.Stdout != nil {
		w, err := output(o.Stdout)
		if err != nil {
			return fail(err)
		}
		cmd.Stdout = w
		if o.MergeStderr {
			cmd.Stderr = w
		}
	}
	if o.Stderr != nil && !o.MergeStderr {
		w, err := output(o.Stderr)
		if err != nil {
			return fail(err)
		}
		cmd.Stderr = w
	}
	err := cmd.Start()
	// An executable someone is still writing cannot be run (ETXTBSY): just installed or updated
	// beside qkit, or written by this very process while another of its goroutines forked, whose
	// child holds the written file open until it execs. That passes in moments; wait a little.
	for wait := 5 * time.Millisecond; err != nil && textBusy(err) && wait <= 160*time.Millisecond; wait *= 2 {
		time.Sleep(wait)
		again := exec.Command(name, args...)
		again.Dir, again.Env, again.SysProcAttr = cmd.Dir, cmd.Env, cmd.SysProcAttr
		again.Stdin, again.Stdout, again.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
		cmd, p.cmd = again, again
		err = cmd.Start()
	}
	if err != nil {
		return fail(err)
	}
	closeAll(theirs)
	live.add(p)
	go func() {
		// The files are ours and the command has its own copies, so Wait copies nothing: it
		// returns as soon as the leader has exited, whoever still holds the pipes.
		_ = cmd.Wait()
		close(p.exited)
	}()
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(func() { r.read(r.f) })
	}
	go func() {
		wg.Wait()
		close(p.readersDone)
	}()
	return p, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// Pid is the leader's process id, which is also the group's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdin is the write end of the command's stdin (Options.StdinPipe), nil without one. Closing it
// is the end of the command's input; Wait closes it too, which ends a write the command never
// reads.
func (p *Proc) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

// Exited is closed once the leader has exited; Status then says how.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Status is how the leader ended: Code -1 while it runs. Stopped and Cause are final once Wait
// has returned.
func (p *Proc) Status() Exit {
	e := Exit{Code: -1}
	p.mu.Lock()
	e.Stopped, e.Cause = p.stopped, p.cause
	p.mu.Unlock()
	select {
	case <-p.exited:
	default:
		return e
	}
	ps := p.cmd.ProcessState
	if ps == nil {
		return e
	}
	e.Code = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = signalName(ws.Signal())
	}
	return e
}

// Stop ends the group: SIGTERM, then SIGKILL if the leader has not exited after the grace. It
// returns once the leader has exited (Wait still sweeps the group and drains the output). A
// leader that already exited is left as it is: its end was its own. Safe to call more than once
// and from any goroutine.
func (p *Proc) Stop() { p.stop(ErrStopped) }

func (p *Proc) stop(cause error) {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		p.mu.Lock()
		p.stopped, p.cause = true, cause
		p.mu.Unlock()
		signalGroup(p.Pid(), false)
		t := time.NewTimer(p.graceNow())
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			signalGroup(p.Pid(), true)
		}
	})
	<-p.exited
}

// Stopping reports whether Shutdown was called while p ran: qkit itself is stopping, and a
// gentle end (closing the process's stdin and waiting) would only delay it; Stop goes straight
// to the group's end.
func (p *Proc) Stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hurried
}

// graceNow is the grace of the next step: Options.Grace, or ShutdownGrace once qkit is stopping.
func (p *Proc) graceNow() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hurried {
		return min(p.grace, ShutdownGrace)
	}
	return p.grace
}

// live is every group Start started whose Wait has not finished: what Shutdown ends.
var live = liveSet{procs: map[*Proc]struct{}{}}

type liveSet struct {
	mu    sync.Mutex
	procs map[*Proc]struct{}
}

func (l *liveSet) add(p *Proc) {
	l.mu.Lock()
	l.procs[p] = struct{}{}
	l.mu.Unlock()
}

func (l *liveSet) remove(p *Proc) {
	l.mu.Lock()
	delete(l.procs, p)
	l.mu.Unlock()
}

func (l *liveSet) has(p *Proc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.procs[p]
	return ok
}

func (l *liveSet) all() []*Proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := make([]*Proc, 0, len(l.procs))
	for p := range l.procs {
		all = append(all, p)
	}
	return all
}

// Shutdown is qkit itself stopping: every group still running (and what is left of one whose
// leader exited and whose Wait has not finished) gets SIGTERM now and SIGKILL after
// ShutdownGrace, and every later step of theirs (Stop, the sweep and drain in Wait) takes
// ShutdownGrace at most. A process still running is reported as stopped by qkit (ErrShutdown,
// or the cause its own Wait or Stop gives), so a run whose agent is gone before its context ends
// still reports a cancellation: the signal handler calls Shutdown before it cancels the command's
// context, so an agent gets SIGTERM before its stdin closes. It does not wait: the callers' own
// Wait calls return once the processes are gone. Groups started afterwards are not affected.
// Safe to call more than once.
func Shutdown() {
	procs := live.all()
	if len(procs) == 0 {
		return
	}
	for _, p := range procs {
		p.mu.Lock()
		p.hurried = true
		select {
		case <-p.exited:
		default:
			if !p.stopped {
				p.stopped, p.cause = true, ErrShutdown
			}
		}
		p.mu.Unlock()
		signalGroup(p.Pid(), false)
	}
	time.AfterFunc(ShutdownGrace, func() {
		for _, p := range procs {
			if live.has(p) { // once Wait has finished, the group is gone and its id may be reused
				signalGroup(p.Pid(), true)
			}
		}
	})
}

// Wait waits for the leader to exit, stopping the group (as Stop does) if ctx ends first, with
// context.Cause(ctx) as Exit.Cause. Then it sweeps the group and drains the output: the readers
// have a grace to finish (at once when the pipes closed with the command), a grace more after
// SIGKILL when something of the group still held them, and then the pipes are closed under them.
// It returns once every reader has returned. Later calls return the same Exit.
func (p *Proc) Wait(ctx context.Context) Exit {
	select {
	case <-p.exited:
	default:
		select {
		case <-p.exited:
		case <-ctx.Done():
			p.stop(context.Cause(ctx))
		}
	}
	p.finishOnce.Do(p.finish)
	return p.exit
}

// finish sweeps what is left of the group once the leader has exited, then drains the readers.
func (p *Proc) finish() {
	if groupSweep {
		signalGroup(p.Pid(), false)
		drained := p.drained()
		signalGroup(p.Pid(), true)
		if !drained {
			p.drained()
		}
	} else {
		p.drained()
	}
	// A process that left the group may hold a pipe still: closing our ends wakes the readers.
	closeAll(p.outs)
	<-p.readersDone
	if p.stdin != nil {
		p.stdin.Close()
	}
	p.exit = p.Status()
	live.remove(p)
}

// drained reports whether the readers finished within the grace.
func (p *Proc) drained() bool {
	t := time.NewTimer(p.graceNow())
	defer t.Stop()
	select {
	case <-p.readersDone:
		return true
	case <-t.C:
		return false
	}
}

// Copy is a reader for Options.Stdout or Stderr that copies the output to w. Should w fail, the
// rest is read and dropped, so the command never blocks on a full pipe.
func Copy(w io.Writer) func(io.Reader) {
	return func(r io.Reader) {
		if _, err := io.Copy(w, r); err != nil {
			_, _ = io.Copy(io.Discard, r)
		}
	}
}
