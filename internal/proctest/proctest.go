// Package proctest tells tests whether a process qkit started is still running, so that "the agent's
// whole process group was stopped" is checked for real: a check that cannot tell (no /proc on
// Linux, an OS it does not know) is an error, never a pass.
package proctest

import (
	"fmt"
	"time"
)

// WaitGone waits until pid no longer runs (a zombie does not: it runs nothing and holds nothing but
// its exit status), checking every 10 ms for up to timeout. It returns an error when pid still
// runs then, or when whether it runs cannot be told.
func WaitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running, err := Running(pid)
		if err != nil {
			return err
		}
		if !running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still runs after %v", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
