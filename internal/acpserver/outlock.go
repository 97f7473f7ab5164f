package acpserver

import "sync"

// outLock serialises writes to stdout and, when several wait, lets the one with the lowest rank go
// first: the SDK's messages (rank 0: responses, tool calls) before any stream, and the stream of an
// older turn before a newer one.
//
// A plain mutex hands the pipe round-robin once writers queue (a client that decodes more slowly
// than q prints). Every running turn then advances at the same pace and they all end at once,
// each holding its whole reply (the runner keeps it) at the same moment: 50 turns of 1 MB peaked
// at 97 MiB of live heap. Served oldest first, turns end one after another and the others wait
// with q blocked on a full pipe, holding little. When the client keeps up, nobody waits and
// ranks do not matter.
type outLock struct {
	mu      sync.Mutex
	busy    bool
	waiters []*outWaiter
}

type outWaiter struct {
	rank  uint64
	ready chan struct{}
}

func (l *outLock) lock(rank uint64) {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return
	}
	w := &outWaiter{rank: rank, ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	<-w.ready // the lock is handed over: busy stays true
}

func (l *outLock) unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) == 0 {
		l.busy = false
		return
	}
	next := 0
	for i, w := range l.waiters {
		if w.rank < l.waiters[next].rank {
			next = i
		}
	}
	w := l.waiters[next]
	l.waiters = append(l.waiters[:next], l.waiters[next+1:]...)
	close(w.ready)
}
