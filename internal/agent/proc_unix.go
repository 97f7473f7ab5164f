//go:build unix

package agent

import (
	"os/exec"
	"syscall"
)

// groupSweep says whether what is left of the process group can be ended after the agent exits.
const groupSweep = true

// newGroup makes the agent the leader of a process group of its own.
func newGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to the agent's process group.
func signalGroup(pgid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, sig)
}
