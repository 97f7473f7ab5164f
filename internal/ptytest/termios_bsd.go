//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package ptytest

import (
	"errors"

	"golang.org/x/sys/unix"
)

func canonicalFd(fd int) (bool, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TIOCGETA)
	if err != nil {
		return false, err
	}
	return t.Lflag&unix.ICANON != 0, nil
}

func pendingFd(int) (int, error) {
	return 0, errors.New("ptytest: the terminal's input queue cannot be read here")
}

func modesOffFd(fd int) ([]string, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TIOCGETA)
	if err != nil {
		return nil, err
	}
	return modesOff(uint64(t.Lflag), uint64(unix.ICANON), uint64(unix.ECHO), uint64(unix.ISIG)), nil
}
