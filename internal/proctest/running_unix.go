//go:build unix

package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// Running reports whether pid is a live process. On Linux a zombie is not (its state in
// /proc/PID/stat is Z or X); elsewhere a zombie counts as running, which can only make a test fail,
// never pass wrongly.
func Running(pid int) (bool, error) {
	if pid <= 0 {
		return false, fmt.Errorf("no such process id %d", pid)
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false, nil
	} else if err != nil && !errors.Is(err, syscall.EPERM) {
		return false, fmt.Errorf("process %d: %w", pid, err)
	}
	if runtime.GOOS != "linux" {
		return true, nil
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		if _, perr := os.Stat("/proc/self/stat"); perr != nil {
			return false, fmt.Errorf("cannot tell whether process %d runs: /proc is not mounted (%v)", pid, perr)
		}
		return false, nil // exited between the two looks
	}
	if err != nil {
		return false, fmt.Errorf("process %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(stat, ')')
	fields := bytes.Fields(stat[i+1:])
	if i < 0 || len(fields) == 0 {
		return false, fmt.Errorf("process %d: unreadable /proc stat %q", pid, stat)
	}
	state := string(fields[0])
	return state != "Z" && state != "X", nil
}
