//go:build windows

package procgroup

import (
	"os/exec"
	"strconv"
	"syscall"
)

// groupSweep is false on Windows: once the leader has exited, its tree cannot be found any more.
const groupSweep = false

// textBusy is false on Windows, which has no ETXTBSY: a file being written cannot be opened.
func textBusy(error) bool { return false }

// newGroup starts the command in a process group of its own.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup ends the process tree of pid: Windows has no SIGTERM, so both steps are a forced
// taskkill of the tree.
func signalGroup(pid int, _ bool) {
	_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).Run()
}

// signalName is never needed on Windows, where no signal ends a process; it names the number.
func signalName(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) }
