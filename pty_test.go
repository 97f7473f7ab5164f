package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/qkit-cli/qkit/internal/ptytest"
)

// ptyCmd is the testscript command
//
//	pty [-exit N] [-lines] [-signal SIG] INPUT PROG [ARGS...]
//
// It runs PROG with stdin, stdout and stderr on a pseudo-terminal, so the program sees a real
// terminal (tables, colour decisions, survey prompts). INPUT is a file whose lines are Go string
// literal bodies ("y\r", "\x1b[B\r"), typed one at a time once the program has gone quiet and its
// prompt has made the terminal raw; with -lines the program reads whole lines on the cooked
// terminal, and keys are typed once it is quiet. Cursor position queries are answered the way a
// terminal would. What the terminal showed becomes stdout; a non-zero exit fails the command
// unless negated. With -exit N, the exit status must be N. With -signal SIG (INT, TERM, HUP, QUIT),
// the program is sent that signal once it has taken the last key and is waiting for the next one
// (quiet, and the terminal raw unless -lines); it must then leave the terminal as a shell has it
// (line editing, echo and signals from keys on) and the cursor shown.
func ptyCmd(ts *testscript.TestScript, neg bool, args []string) {
	wantExit := -1
	lines := false
	var sig syscall.Signal
	for len(args) > 2 {
		if args[0] == "-signal" {
			sig = map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT}[args[1]]
			if sig == 0 {
				ts.Fatalf("pty: unknown signal %q", args[1])
			}
			args = args[2:]
		} else if args[0] == "-exit" {
			n, err := strconv.Atoi(args[1])
			ts.Check(err)
			wantExit, args = n, args[2:]
		} else if args[0] == "-lines" {
			lines, args = true, args[1:]
		} else {
			break
		}
	}
	if len(args) < 2 || neg && wantExit >= 0 {
		ts.Fatalf("usage: pty [-exit N] [-lines] [-signal SIG] INPUT PROG [ARGS...]")
	}
	var keys []string
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if line == "" {
			continue
		}
		k, err := strconv.Unquote(`"` + line + `"`)
		ts.Check(err)
		keys = append(keys, k)
	}
	path, err := exec.LookPath(args[1])
	ts.Check(err)
	c := exec.Command(path, args[2:]...)
	c.Dir = ts.Getenv("WORK")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, name+"="+ts.Getenv(name))
	}
	c.Env = append(c.Env, "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"), "QKIT_HOME="+ts.Getenv("QKIT_HOME"), "TERM=xterm", "NO_COLOR="+ts.Getenv("NO_COLOR"))
	f, tty, err := pty.Open()
	ts.Check(err)
	defer f.Close()
	ts.Check(pty.Setsize(f, &pty.Winsize{Rows: 40, Cols: 120}))
	c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = c.Start()
	// The program's side is opened again by name to see what it has not read: kept open here, it
	// would keep the reader below from ending when the program exits.
	ttyName := tty.Name()
	_ = tty.Close()
	ts.Check(err)

	var mu sync.Mutex
	var screen bytes.Buffer
	last := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				mu.Lock()
				chunk := buf[:n]
				if bytes.Contains(chunk, []byte("\x1b[6n")) {
					_, _ = f.Write([]byte("\x1b[1;1R"))
					chunk = bytes.ReplaceAll(chunk, []byte("\x1b[6n"), nil)
				}
				screen.Write(chunk)
				last = time.Now()
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	// quiet waits until the program has answered the previous key (or started, for the first one)
	// by printing something, has then gone quiet, and (unless -lines) reads keys one at a time: a
	// survey prompt draws itself before it makes the terminal raw (the one before restored cooked
	// mode as it ended), and a key typed while the terminal is cooked is echoed, or turned into a
	// signal (Ctrl-C). The mode is checked through the terminal's master side, which reports it on
	// Linux; where it cannot be told, the keys are typed once the program is quiet.
	seen := 0
	quiet := func() {
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			idle, printed := time.Since(last), screen.Len()
			mu.Unlock()
			if printed > seen && idle > 150*time.Millisecond {
				seen = printed
				if lines {
					return
				}
				if _, err := ptytest.Canonical(f); err != nil {
					ts.Logf("pty: typing without knowing the terminal's mode: %v", err)
					return
				}
				if err := ptytest.WaitRaw(f, 20*time.Second); err != nil {
					_ = c.Process.Kill()
					_ = c.Wait()
					ts.Fatalf("pty: %v; a program that reads whole lines needs pty -lines", err)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		seen = screen.Len()
		mu.Unlock()
	}
	// typeKeys writes k once the program has read everything written to the terminal, under the
	// lock the answers to cursor queries are written with: a line prompt reads such an answer
	// through a buffer it drops afterwards, so keys right behind an answer it has not read yet
	// would be lost, while keys written first are kept.
	typeKeys := func(k string) {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			mu.Lock()
			unread, err := unreadInput(ttyName)
			if err != nil || unread == 0 || time.Now().After(deadline) {
				_, werr := f.Write([]byte(k))
				mu.Unlock()
				ts.Check(werr)
				return
			}
			mu.Unlock()
		}
	}
	for _, k := range keys {
		quiet()
		typeKeys(k)
	}
	if sig != 0 {
		quiet()
		ts.Check(c.Process.Signal(sig))
	}
	// A program still waiting for input a minute after the last key would hang the whole test run:
	// stop it and fail with what the terminal showed.
	hung := time.AfterFunc(time.Minute, func() { _ = c.Process.Kill() })
	werr := c.Wait()
	timedOut := !hung.Stop()
	var modeErr error
	if sig != 0 {
		// The master side reports the terminal's mode after its program is gone.
		modeErr = ptytest.Cooked(f)
	}
	// Drain before closing: the reader ends with EIO once the child's side is closed and all it
	// wrote has been read. Closing first loses the tail of the output under load.
	drain, stop := context.WithTimeout(context.Background(), 5*time.Second)
	select {
	case <-done:
	case <-drain.Done():
	}
	stop()
	_ = f.Close()
	<-done
	mu.Lock()
	_, _ = ts.Stdout().Write(screen.Bytes())
	mu.Unlock()
	if timedOut {
		ts.Fatalf("%s was still running a minute after the last key; killed", args[1])
	}
	if sig != 0 {
		if modeErr != nil {
			ts.Fatalf("after %v: %v", sig, modeErr)
		}
		mu.Lock()
		hidden := bytes.LastIndex(screen.Bytes(), []byte("\x1b[?25l")) > bytes.LastIndex(screen.Bytes(), []byte("\x1b[?25h"))
		mu.Unlock()
		if hidden {
			ts.Fatalf("after %v: the cursor was left hidden", sig)
		}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		ts.Fatalf("%s: %v", args[1], werr)
	}
	if wantExit >= 0 {
		if got := c.ProcessState.ExitCode(); got != wantExit {
			ts.Fatalf("%s exited %d, want %d", args[1], got, wantExit)
		}
		return
	}
	if (werr != nil) != neg {
		ts.Fatalf("%s: unexpected exit status: %v", args[1], werr)
	}
}

// unreadInput is how many bytes written to the terminal named name its program has not read.
func unreadInput(name string) (int, error) {
	tty, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer tty.Close()
	return ptytest.Pending(tty)
}
