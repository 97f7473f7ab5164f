package acpserver

import (
	"testing"
	"time"
)

// TestOutLockServesTheLowestRankFirst: writers that queue behind a busy stdout go in rank order,
// not in the order they came (a plain mutex would give 9, 5, 1).
func TestOutLockServesTheLowestRankFirst(t *testing.T) {
	var l outLock
	l.lock(7)
	order := make(chan uint64, 3)
	for _, rank := range []uint64{9, 5, 1} {
		go func() {
			l.lock(rank)
			order <- rank
			l.unlock()
		}()
		// Queue them one after another.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			n := len(l.waiters)
			l.mu.Unlock()
			if n > 0 && last(&l) == rank {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writer %d never queued", rank)
			}
		}
	}
	l.unlock()
	for _, want := range []uint64{1, 5, 9} {
		if got := <-order; got != want {
			t.Fatalf("served %d, want %d", got, want)
		}
	}
	l.lock(0) // free again
	l.unlock()
}

func last(l *outLock) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiters[len(l.waiters)-1].rank
}
