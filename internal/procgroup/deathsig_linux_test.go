package procgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/proctest"
)

// TestDeathSignal: when the process that started a group dies without stopping it (SIGKILL, the
// OOM killer), the kernel kills the leader, which ignores SIGTERM. Its own children are not
// covered (deathsig_linux.go).
func TestDeathSignal(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "leader.pid")
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), orphanEnv+"="+pidFile)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	leader := waitPid(t, pidFile)
	t.Cleanup(func() { signalGroup(leader, true) })
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if err := proctest.WaitGone(leader, 10*time.Second); err != nil {
		t.Fatalf("the leader outlived the qkit that started it: %v", err)
	}
}
