//go:build unix

package filestore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// OpenNoFollow opens name like os.OpenFile but refuses a symbolic link in its last element: a link
// planted at a lock or log path must not make qkit create or write a file where the link points.
func OpenNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
	if err != nil && errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, which qkit does not follow (remove it): %w", name, err)
	}
	return f, err
}

// OpenRegular opens name for reading only when it is a regular file. It never blocks: a FIFO or a
// device is refused without being read, whether it was one already or was put in place of a file
// after the caller looked.
func OpenRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return checkRegular(f)
}
