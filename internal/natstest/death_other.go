//go:build !linux

package natstest

import "os/exec"

// setDeathSignal does nothing where the kernel cannot tie a process to its parent's life: the
// server stays in the test's process group, so a Ctrl-C in the terminal reaches it too.
func setDeathSignal(*exec.Cmd) {}
