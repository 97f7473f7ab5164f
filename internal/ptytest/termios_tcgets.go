//go:build aix || linux || solaris || zos

package ptytest

import "golang.org/x/sys/unix"

func canonicalFd(fd int) (bool, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, err
	}
	return t.Lflag&unix.ICANON != 0, nil
}
