//go:build !(aix || linux || solaris || zos || darwin || dragonfly || freebsd || netbsd || openbsd)

package ptytest

import (
	"errors"
	"runtime"
)

func canonicalFd(int) (bool, error) {
	return false, errors.New("ptytest: the terminal mode cannot be read on " + runtime.GOOS)
}
