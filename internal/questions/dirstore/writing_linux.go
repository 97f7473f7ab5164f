package dirstore

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// beingWritten reports whether some process has path open for writing: an answers.json written in
// place and not closed yet. It asks the kernel for a read lease, which is refused (EAGAIN) exactly
// while the file is open for writing anywhere, and drops the lease at once. known is false when the
// kernel cannot tell (a file of another owner, a filesystem without leases).
func beingWritten(path string) (busy, known bool) {
	// Never blocks: a FIFO or device put in answers.json's place is not opened for reading.
	f, err := filestore.OpenRegular(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	_, err = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	if errors.Is(err, unix.EAGAIN) {
		return true, true
	}
	if err != nil {
		return false, false
	}
	_, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	return false, true
}

// lockHeld reports whether another change holds the set's lock at this moment (an Answer between
// its answers.json and its status.json): the waiter then waits for that change's status event
// instead of queueing behind the lock, which the writer keeps until its folder is synced.
func lockHeld(statusPath string) bool {
	fd, err := unix.Open(statusPath+".lock", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(fd, unix.LOCK_UN)
	return false
}
