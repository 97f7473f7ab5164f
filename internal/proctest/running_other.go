//go:build !unix

package proctest

import (
	"fmt"
	"runtime"
)

// Running cannot tell on this OS: tests that need it fail rather than pass unchecked.
func Running(pid int) (bool, error) {
	return false, fmt.Errorf("cannot tell whether process %d runs on %s", pid, runtime.GOOS)
}
