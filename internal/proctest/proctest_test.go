package proctest

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestRunningAndGone(t *testing.T) {
	if running, err := Running(os.Getpid()); err != nil || !running {
		t.Fatalf("Running(self) = %v, %v", running, err)
	}
	if _, err := Running(0); err == nil {
		t.Fatal("Running(0) is not an error")
	}
	if runtime.GOOS == "windows" {
		return
	}
	// A child that exited but was not waited for is a zombie: gone.
	c := exec.Command("sh", "-c", "exit 0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitGone(c.Process.Pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	// A sleeping child runs until killed.
	s := exec.Command("sleep", "30")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Process.Kill()
	if err := WaitGone(s.Process.Pid, 50*time.Millisecond); err == nil {
		t.Fatal("WaitGone says a sleeping process is gone")
	}
	_ = s.Process.Kill()
	_ = s.Wait()
	if err := WaitGone(s.Process.Pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
