package ptytest

import "golang.org/x/sys/unix"

func canonicalFd(fd int) (bool, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, err
	}
	return t.Lflag&unix.ICANON != 0, nil
}

// pendingFd polls fd first: the terminal hands what is written to its other side to the input queue
// a moment later (a kernel work item), and only a poll waits for that hand-over before it answers,
// so the count that follows includes everything written so far.
func pendingFd(fd int) (int, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(p, 0)
		if err == nil {
			break
		}
		if err != unix.EINTR { // the runtime's own signals interrupt it
			return 0, err
		}
	}
	return unix.IoctlGetInt(fd, unix.TIOCINQ)
}

func modesOffFd(fd int) ([]string, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	return modesOff(uint64(t.Lflag), uint64(unix.ICANON), uint64(unix.ECHO), uint64(unix.ISIG)), nil
}
