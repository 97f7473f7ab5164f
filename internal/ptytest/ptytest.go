// Package ptytest tells terminal tests when a program on a pseudo-terminal reads keys one at a time.
// A survey prompt draws itself before it puts the terminal in raw mode, so a key typed as soon as the
// prompt shows can reach the cooked line discipline instead: Ctrl-C there is a signal with nobody to
// go to and is lost, other keys are echoed. A test types once the terminal is raw.
package ptytest

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// WaitRaw waits (checking every 2 ms, for up to timeout) until the terminal f belongs to (either side
// of a pseudo-terminal) is out of canonical mode. It returns an error when it is not by then, or when
// the mode cannot be told on this system.
func WaitRaw(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		canonical, err := Canonical(f)
		if err != nil {
			return err
		}
		if !canonical {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the terminal was still in canonical (cooked) mode after %v", timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Canonical reports whether the terminal f belongs to reads whole lines (ICANON set). It does not
// change f's blocking mode (f.Fd would).
func Canonical(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var canonical bool
	var ierr error
	if err := rc.Control(func(fd uintptr) { canonical, ierr = canonicalFd(int(fd)) }); err != nil {
		return false, err
	}
	return canonical, ierr
}

// Pending is the number of bytes typed into the terminal of tty (its program's side) that the program
// has not read yet, everything written to the other side so far included.
func Pending(tty *os.File) (int, error) {
	rc, err := tty.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = pendingFd(int(fd)) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// Cooked returns an error naming what is off when the terminal f belongs to is not in the mode a
// shell leaves it in: line editing (ICANON), echo (ECHO) and signals from keys (ISIG). A prompt in raw
// mode clears all three; a program that ends without putting them back leaves the person's shell
// without echo, Ctrl-C or line editing.
func Cooked(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var off []string
	var ierr error
	if err := rc.Control(func(fd uintptr) { off, ierr = modesOffFd(int(fd)) }); err != nil {
		return err
	}
	if ierr != nil {
		return ierr
	}
	if len(off) > 0 {
		return fmt.Errorf("the terminal was left with -%s", strings.Join(off, " -"))
	}
	return nil
}

// modesOff names which of icanon, echo and isig lflag lacks.
func modesOff(lflag, icanon, echo, isig uint64) []string {
	var off []string
	for _, m := range []struct {
		bit  uint64
		name string
	}{{icanon, "icanon"}, {echo, "echo"}, {isig, "isig"}} {
		if lflag&m.bit == 0 {
			off = append(off, m.name)
		}
	}
	return off
}
