//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing outside Linux: no other Unix has a parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}
