//go:build unix

package prompt

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/AlecAivazis/survey/v2/terminal"
	"golang.org/x/sys/unix"
)

// cancelReader reads the terminal for survey and ends the read when ctx ends: it waits with poll(2)
// on the terminal and on a pipe that ctx's end writes to, so a read blocked on the terminal returns
// ErrInterrupted instead of holding on to the terminal. survey then unwinds as it does for any read
// error: it puts the terminal back in the mode it found and shows the cursor again.
type cancelReader struct {
	in     terminal.FileReader
	fd     int
	ctx    context.Context
	wake   [2]int // the pipe: [0] is polled, [1] is written once ctx ends
	stop   func() bool
	woken  chan struct{} // closed once the pipe is written
	closed sync.Once
}

func newCancelReader(ctx context.Context, in terminal.FileReader) (terminal.FileReader, func(), error) {
	r := &cancelReader{in: in, fd: int(in.Fd()), ctx: ctx, woken: make(chan struct{})}
	if err := unix.Pipe(r.wake[:]); err != nil {
		return nil, nil, os.NewSyscallError("pipe", err)
	}
	unix.CloseOnExec(r.wake[0])
	unix.CloseOnExec(r.wake[1])
	r.stop = context.AfterFunc(ctx, func() {
		defer close(r.woken)
		_, _ = unix.Write(r.wake[1], []byte{1})
	})
	return r, r.close, nil
}

func (r *cancelReader) close() {
	r.closed.Do(func() {
		if !r.stop() {
			<-r.woken // the pipe is being written: close it only after that write
		}
		_ = unix.Close(r.wake[0])
		_ = unix.Close(r.wake[1])
	})
}

// Fd is the terminal's: survey sets its mode through it.
func (r *cancelReader) Fd() uintptr { return r.in.Fd() }

func (r *cancelReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.ctx.Err() != nil {
			return 0, ErrInterrupted
		}
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return 0, os.NewSyscallError("poll", err)
		}
		if fds[1].Revents != 0 {
			return 0, ErrInterrupted
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(r.fd, p)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, errEOF
		}
		return n, nil
	}
}
