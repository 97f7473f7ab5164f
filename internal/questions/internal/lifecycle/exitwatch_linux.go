package lifecycle

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/qkit-cli/qkit/internal/questions"
)

// watchExit calls exited once p has exited, without polling: a pidfd becomes readable when its
// process ends, whoever its parent is. stop ends the watch. ok is false when p cannot be watched
// (not on this machine, or a kernel without pidfd); the caller then looks again on a timer. Each
// watch holds a goroutine blocked in poll(2), so a wait holds one per terminal that claims a set.
func watchExit(p questions.Process, exited func()) (stop func(), ok bool) {
	if !p.Local() {
		return nil, false
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		go exited() // gone already
		return func() {}, true
	}
	if err != nil {
		return nil, false
	}
	// The pidfd pins the PID: when it names another process now, the claimer is gone.
	if p.Gone() {
		_ = unix.Close(fd)
		go exited()
		return func() {}, true
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		_ = unix.Close(fd)
		return nil, false
	}
	go func() {
		defer unix.Close(fd)
		defer unix.Close(pipe[0])
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(pipe[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil, fds[1].Revents != 0:
				return // stopped (the pipe's write end closed), or poll failed
			case fds[0].Revents != 0:
				exited()
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { _ = unix.Close(pipe[1]) }) }, true
}
