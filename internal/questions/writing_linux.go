package questions

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// beingWritten reports whether some process has path open for writing: an answers.json written in
// place and not closed yet. It asks the kernel for a read lease, which is refused (EAGAIN) exactly
// while the file is open for writing anywhere, and drops the lease at once. known is false when the
// kernel cannot tell (a file of another owner, a filesystem without leases).
func beingWritten(path string) (busy, known bool) {
	f, err := os.Open(path)
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
