package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// lockHolder is the testscript program `lockholder FILE SIGNAL PROG [ARGS...]`: it takes FILE's
// lock (filestore.LockFor), starts PROG, and once PROG has FILE's .lock open (it is waiting for the
// lock, its signal handler long installed) sends it SIGNAL (INT, TERM or HUP). Then it releases the
// lock, when PROG has ended or at the latest after ten seconds, so that a PROG that went on
// waiting after the signal gets the lock and shows what it does with it. It exits with PROG's exit
// status; PROG's output is its own.
func lockHolder(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: lockholder FILE INT|TERM|HUP PROG [ARGS...]")
		return 2
	}
	sig, ok := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP}[args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "lockholder: unknown signal %s\n", args[1])
		return 2
	}
	lock, err := filestore.LockFor(args[0], 0o700)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockholder:", err)
		return 2
	}
	defer lock.Unlock()
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "lockholder:", err)
		return 2
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	lockFile, _ := filepath.Abs(args[0] + ".lock")
	var done error
	waiting := false
	for !waiting {
		select {
		case done = <-ended:
			fmt.Fprintln(os.Stderr, "lockholder: the command ended before it waited for the lock")
			return exitStatus(done)
		case <-time.After(5 * time.Millisecond):
			waiting = hasOpen(cmd.Process.Pid, lockFile)
		}
	}
	_ = cmd.Process.Signal(sig)
	select {
	case done = <-ended:
		lock.Unlock()
	case <-time.After(10 * time.Second):
		lock.Unlock()
		done = <-ended
	}
	return exitStatus(done)
}

// hasOpen says whether process pid has file open (its /proc/PID/fd links).
func hasOpen(pid int, file string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == file {
			return true
		}
	}
	return false
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 2
	}
	return 0
}
