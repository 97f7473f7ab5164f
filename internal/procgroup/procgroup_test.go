//go:build unix

package procgroup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/proctest"
)

// escapeEnv makes the test binary the helper of TestDrainBounded: it starts a process in a
// session of its own (out of the group) that keeps its stdout and sleeps, writes that process's
// pid to the file named, and exits.
const escapeEnv = "PROCGROUP_TEST_ESCAPE"

// sleepEnv makes the test binary sleep a minute: the escaped process.
const sleepEnv = "PROCGROUP_TEST_SLEEP"

// orphanEnv makes the test binary the helper of TestDeathSignal: it starts a leader that ignores
// SIGTERM through Start, writes the leader's pid to the file named, and waits to be killed.
const orphanEnv = "PROCGROUP_TEST_ORPHAN"

func TestMain(m *testing.M) {
	if file := os.Getenv(orphanEnv); file != "" {
		p, err := Start("sh", []string{"-c", "trap '' TERM HUP INT; while :; do sleep 1; done"}, Options{})
		if err != nil {
			os.Exit(97)
		}
		if err := os.WriteFile(file, []byte(strconv.Itoa(p.Pid())), 0o600); err != nil {
			os.Exit(98)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if os.Getenv(sleepEnv) == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if file := os.Getenv(escapeEnv); file != "" {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), sleepEnv+"=1", escapeEnv+"=")
		c.Stdout = os.Stdout
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			os.Exit(97)
		}
		if err := os.WriteFile(file, []byte(strconv.Itoa(c.Process.Pid)), 0o600); err != nil {
			os.Exit(98)
		}
		os.Stdout.WriteString("escaped\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// waitPid waits for a pid file to be written and returns the pid.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for range 6000 {
		if data, err := os.ReadFile(file); err == nil && len(data) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("pid file %q", data)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitExit calls Wait(ctx) and fails the test if it has not returned after a minute (it would
// otherwise hang the test run).
func waitExit(t *testing.T, p *Proc, ctx context.Context) Exit {
	t.Helper()
	done := make(chan Exit, 1)
	go func() { done <- p.Wait(ctx) }()
	select {
	case e := <-done:
		return e
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return")
		return Exit{}
	}
}

// TestStopEndsTheGroup: Stop ends the leader and the grandchild it started (in its group), and the
// end is reported as qkit's: SIGTERM, stopped, ErrStopped.
func TestStopEndsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "gc.pid")
	var out bytes.Buffer
	p, err := Start("sh", []string{"-c", `sleep 60 & echo $! > "$0"; echo started; wait`, pidFile}, Options{Stdout: Copy(&out), Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gc := waitPid(t, pidFile)
	p.Stop()
	e := waitExit(t, p, context.Background())
	if e.Signal != "SIGTERM" || e.Code != -1 || !e.Stopped || !errors.Is(e.Cause, ErrStopped) || e.String() != "terminated by SIGTERM" || e.Ended() != "was terminated by SIGTERM" {
		t.Fatalf("exit %+v (%s)", e, e)
	}
	if err := proctest.WaitGone(gc, 10*time.Second); err != nil {
		t.Fatalf("the grandchild: %v", err)
	}
	if out.String() != "started\n" {
		t.Fatalf("output %q", out.String())
	}
}

// TestWaitStopsOnContext: Wait stops the group when its context ends, with the context's cause;
// a leader that ignores SIGTERM gets SIGKILL after the grace.
func TestWaitStopsOnContext(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "gc.pid")
	ready := filepath.Join(t.TempDir(), "ready")
	p, err := Start("sh", []string{"-c", `trap '' TERM; sleep 60 & echo $! > "$0"; : > "$1"; wait; wait`, pidFile, ready},
		Options{Stdout: Copy(io.Discard), Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	gc := waitPid(t, pidFile)
	for range 6000 {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	why := errors.New("the caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(why)
	e := waitExit(t, p, ctx)
	if e.Signal != "SIGKILL" || !e.Stopped || !errors.Is(e.Cause, why) {
		t.Fatalf("exit %+v", e)
	}
	if err := proctest.WaitGone(gc, 10*time.Second); err != nil {
		t.Fatalf("the grandchild: %v", err)
	}
	if again := p.Wait(context.Background()); again != e {
		t.Fatalf("second Wait %+v, first %+v", again, e)
	}
}

// TestSweepAfterExit: a leader that exits on its own leaves a helper holding its stdout; Wait
// ends the helper (the sweep) instead of waiting for it, and the exit is the leader's own.
func TestSweepAfterExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "gc.pid")
	var out bytes.Buffer
	p, err := Start("sh", []string{"-c", `sleep 60 & echo $! > "$0"; echo bye; exit 3`, pidFile}, Options{Stdout: Copy(&out), Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := waitExit(t, p, context.Background())
	if e.Code != 3 || e.Signal != "" || e.Stopped || e.Cause != nil || e.String() != "exit status 3" || e.Ended() != "exited with status 3" {
		t.Fatalf("exit %+v (%s)", e, e)
	}
	if err := proctest.WaitGone(waitPid(t, pidFile), 10*time.Second); err != nil {
		t.Fatalf("the helper: %v", err)
	}
	if out.String() != "bye\n" {
		t.Fatalf("output %q", out.String())
	}
}

// TestDrainBounded: a process that left the group (a session of its own) and holds the stdout
// pipe cannot hang Wait: the reader is cut off after the drain, with what came before the exit read.
func TestDrainBounded(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escaped.pid")
	var out bytes.Buffer
	read := make(chan struct{})
	p, err := Start(os.Args[0], nil, Options{
		Env:    append(os.Environ(), escapeEnv+"="+pidFile),
		Stdout: func(r io.Reader) { defer close(read); Copy(&out)(r) },
		Grace:  100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := waitExit(t, p, context.Background())
	escaped := waitPid(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	select {
	case <-read:
	default:
		t.Fatal("Wait returned before the reader did")
	}
	if e.Code != 0 || e.Stopped || out.String() != "escaped\n" {
		t.Fatalf("exit %+v, output %q", e, out.String())
	}
	if running, err := proctest.Running(escaped); err != nil || !running {
		t.Fatalf("the escaped process should still hold the pipe (running %v, %v): the test proves nothing", running, err)
	}
}

// TestExitBySignal: a process killed by a signal that qkit did not send is reported by the
// signal's name, and not as stopped.
func TestExitBySignal(t *testing.T) {
	p, err := Start("sh", []string{"-c", "kill -KILL $$"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := waitExit(t, p, context.Background())
	if e.Signal != "SIGKILL" || e.Code != -1 || e.Stopped || e.String() != "terminated by SIGKILL" || e.Ended() != "was terminated by SIGKILL" {
		t.Fatalf("exit %+v (%s)", e, e)
	}
	if got := signalName(syscall.Signal(99)); got != "signal 99" {
		t.Fatalf("an unnamed signal: %q", got)
	}
}

// TestPipes: stdin through a pipe, stderr merged into stdout in order, and stderr on its own.
func TestPipes(t *testing.T) {
	var out bytes.Buffer
	p, err := Start("sh", []string{"-c", "cat; echo err >&2"}, Options{StdinPipe: true, Stdout: Copy(&out), MergeStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), "in\n"); err != nil {
		t.Fatal(err)
	}
	_ = p.Stdin().Close()
	if e := waitExit(t, p, context.Background()); e.Code != 0 || out.String() != "in\nerr\n" {
		t.Fatalf("exit %+v, output %q", e, out.String())
	}

	var stdout, stderr bytes.Buffer
	p, err = Start("sh", []string{"-c", "echo out; echo err >&2"}, Options{Stdout: Copy(&stdout), Stderr: Copy(&stderr)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stdin() != nil {
		t.Fatal("a stdin pipe nobody asked for")
	}
	if e := waitExit(t, p, context.Background()); e.Code != 0 || stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Fatalf("exit %+v, stdout %q, stderr %q", e, stdout.String(), stderr.String())
	}
}

// TestStartError: a missing command is exec's not-found error, with nothing started.
func TestStartError(t *testing.T) {
	_, err := Start(filepath.Join(t.TempDir(), "no-such-command"), nil, Options{StdinPipe: true, Stdout: Copy(io.Discard), Stderr: Copy(io.Discard)})
	if err == nil {
		t.Fatal("started a command that does not exist")
	}
	if _, err := Start("no-such-command-procgroup", nil, Options{}); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("not found: %v", err)
	}
}

// An executable still open for writing (just installed, or written while another goroutine forked)
// cannot be run at once (ETXTBSY); Start waits for the writer instead of failing.
func TestStartWaitsForAnExecutableBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("#!/bin/sh\necho started\n"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	time.AfterFunc(30*time.Millisecond, func() { f.Close(); close(closed) })
	var out bytes.Buffer
	p, err := Start(path, nil, Options{Stdout: Copy(&out)})
	if err != nil {
		t.Fatalf("Start while the file was open for writing: %v", err)
	}
	<-closed
	if exit := p.Wait(context.Background()); exit.Code != 0 || out.String() != "started\n" {
		t.Fatalf("exit %+v, output %q", exit, out.String())
	}
}

// deafGroup starts a leader that ignores SIGTERM with a grandchild that ignores it too, and
// returns the leader and the grandchild's pid once both run.
func deafGroup(t *testing.T, grace time.Duration) (*Proc, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "gc.pid")
	p, err := Start("sh", []string{"-c", `trap '' TERM; (trap '' TERM; while :; do sleep 1; done) & echo $! > "$0"; while :; do sleep 1; done`, pidFile},
		Options{Stdout: Copy(io.Discard), Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	return p, waitPid(t, pidFile)
}

// TestShutdownEndsEveryGroup: Shutdown (qkit itself stopping) ends every running group at once,
// deaf leaders and grandchildren too, without anyone calling Stop; a Stop already waiting out a
// long grace ends with it, and the exits say qkit stopped them. A group started later is not
// touched.
func TestShutdownEndsEveryGroup(t *testing.T) {
	waiting, gc1 := deafGroup(t, time.Hour)
	stopping, gc2 := deafGroup(t, time.Hour)
	waited := make(chan Exit, 1)
	go func() { waited <- waitExit(t, waiting, context.Background()) }()
	stopped := make(chan struct{})
	go func() { stopping.Stop(); close(stopped) }()
	for !stopping.Status().Stopped { // the Stop has sent SIGTERM and waits out its grace
		time.Sleep(10 * time.Millisecond)
	}
	Shutdown()
	if !waiting.Stopping() || !stopping.Stopping() {
		t.Fatal("Stopping is false after Shutdown")
	}
	e := <-waited
	if e.Signal != "SIGKILL" || !e.Stopped || !errors.Is(e.Cause, ErrShutdown) {
		t.Fatalf("the waited group: exit %+v", e)
	}
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("a Stop with an hour's grace outlived Shutdown")
	}
	if e := waitExit(t, stopping, context.Background()); e.Signal != "SIGKILL" || !e.Stopped || !errors.Is(e.Cause, ErrStopped) {
		t.Fatalf("the stopped group: exit %+v", e)
	}
	for _, gc := range []int{gc1, gc2} {
		if err := proctest.WaitGone(gc, 10*time.Second); err != nil {
			t.Fatalf("a grandchild: %v", err)
		}
	}
	if n := len(live.all()); n != 0 {
		t.Fatalf("%d groups still counted as live", n)
	}
	later, err := Start("sh", []string{"-c", "exit 4"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if later.Stopping() {
		t.Fatal("a group started after Shutdown counts as stopping")
	}
	if e := waitExit(t, later, context.Background()); e.Code != 4 || e.Stopped {
		t.Fatalf("the later group: exit %+v", e)
	}
}
