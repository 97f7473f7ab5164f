//go:build unix

package mcpbridge

import (
	"os/exec"
	"syscall"
)

// newGroup makes the server the leader of a process group of its own.
func newGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup ends whatever is left of the server's process group (a helper it started).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
