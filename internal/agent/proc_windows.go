//go:build windows

package agent

import (
	"os/exec"
	"strconv"
	"syscall"
)

// groupSweep is false on Windows: once the agent has exited, its tree cannot be found any more.
const groupSweep = false

// newGroup starts the agent in a process group of its own.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup ends the agent's process tree: Windows has no SIGTERM, so both steps are a forced
// taskkill of the tree.
func signalGroup(pid int, _ bool) {
	_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).Run()
}
