//go:build windows

package filestore

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLockFile takes f's exclusive lock if it is free, without waiting: ok is false when another
// holds it.
func tryLockFile(f *os.File) (ok bool, err error) {
	var ol windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	}
	return false, err
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

func syncDir(string) {}
