package natstest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the server when the thread that started it exits, which it
// does with the test process, however that ends (a panic, go test's timeout, Ctrl-C): no server
// outlives its test.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
