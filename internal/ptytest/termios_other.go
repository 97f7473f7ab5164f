//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package ptytest

import (
	"errors"
	"runtime"
)

func canonicalFd(int) (bool, error) {
	return false, errors.New("ptytest: the terminal mode cannot be read on " + runtime.GOOS)
}

func pendingFd(int) (int, error) {
	return 0, errors.New("ptytest: the terminal's input queue cannot be read on " + runtime.GOOS)
}

func modesOffFd(int) ([]string, error) {
	return nil, errors.New("ptytest: the terminal mode cannot be read on " + runtime.GOOS)
}
