package questions

import (
	"os/exec"
	"testing"
	"time"
)

// TestWaitPendingWatchesTheClaimersExit: a claim's terminal that dies writes nothing, and the wait
// for a pending set learns of it from the exit watch, with every timer it could fall back on set to
// an hour (the file store's poll, the recheck of a local claim): waiting is a watch, not a poll.
func TestWaitPendingWatchesTheClaimersExit(t *testing.T) {
	was := localClaimRecheck
	localClaimRecheck = time.Hour
	t.Cleanup(func() { localClaimRecheck = was })
	eachStore(t, func(t *testing.T, b *backend) {
		s, other := b.open(t, Options{Poll: time.Hour}), b.open(t, Options{Poll: time.Hour})
		sess, term := claimedByTerminal(t, s)
		decoy := createIn(t, s)
		done := waitPendingPast(other, decoy.ID, 30*time.Second)
		_ = term.Process.Kill()
		_ = term.Wait()
		if p := <-done; p == nil || p.ID != sess.ID {
			t.Fatalf("got %v (the wait did not learn that the claim's terminal exited)", p)
		}
	})
}

// TestExitWatchesStopAndFallBack: a watch ends when its claim is gone from the list, and a process
// that cannot be watched (on another machine) is looked at again at its lease's end.
func TestExitWatchesStopAndFallBack(t *testing.T) {
	term := exec.Command("sleep", "60")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Process.Kill(); _ = term.Wait() })
	local := terminalProcess(term)
	me := Self()
	now := time.Now()
	claimed := func(p Process) *Session {
		return &Session{Status: Status{Status: InProgress, Claim: &Claim{By: p, Since: now}}}
	}
	w := newExitWatches()
	defer w.close()
	if next := w.claims([]*Session{claimed(local)}, now); next != -1 || len(w.stops) != 1 {
		t.Fatalf("local claim: next %v, %d watches", next, len(w.stops))
	}
	remote := Process{PID: 42, Host: me.Host + "-elsewhere"}
	if next := w.claims([]*Session{claimed(remote)}, now); next != claimLease+time.Second || len(w.stops) != 0 {
		t.Fatalf("remote claim: next %v, %d watches", next, len(w.stops))
	}
}
