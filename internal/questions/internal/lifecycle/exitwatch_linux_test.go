package lifecycle

import (
	"os/exec"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// TestExitWatchesStopAndFallBack: a watch ends when its claim is gone from the list, and a process
// that cannot be watched (on another machine) is looked at again at its lease's end.
func TestExitWatchesStopAndFallBack(t *testing.T) {
	term := exec.Command("sleep", "60")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Process.Kill(); _ = term.Wait() })
	me := questions.Self()
	local := questions.Process{PID: term.Process.Pid, Host: me.Host, Boot: me.Boot} // a terminal here
	now := time.Now()
	claimed := func(p questions.Process) *questions.Session {
		return &questions.Session{Status: questions.Status{Status: questions.InProgress, Claim: &questions.Claim{By: p, Since: now}}}
	}
	w := NewExitWatches()
	defer w.Close()
	if next := w.Claims([]*questions.Session{claimed(local)}, now); next != -1 || len(w.stops) != 1 {
		t.Fatalf("local claim: next %v, %d watches", next, len(w.stops))
	}
	remote := questions.Process{PID: 42, Host: me.Host + "-elsewhere"}
	if next := w.Claims([]*questions.Session{claimed(remote)}, now); next != ClaimLease+time.Second || len(w.stops) != 0 {
		t.Fatalf("remote claim: next %v, %d watches", next, len(w.stops))
	}
}
