package questions

import "sync"

// Both stores share one watcher among all their waits (a hub: fsnotify for the file store, a bucket
// watcher for the NATS store). What a hub watches differs; how it is counted and how it wakes its
// subscribers is written once here.

// sub is one subscription to a hub: its key (a watched directory, or a set id) and the channel it
// wakes.
type sub struct {
	dir string
	c   chan struct{}
}

// subscribers are a hub's subscriptions by key, used under the hub's lock.
type subscribers map[string]map[*sub]struct{}

// add subscribes c to key; first is true when key had no subscriber yet.
func (m subscribers) add(key string, c chan struct{}) (s *sub, first bool) {
	s = &sub{dir: key, c: c}
	set := m[key]
	if set == nil {
		set = map[*sub]struct{}{}
		m[key] = set
		first = true
	}
	set[s] = struct{}{}
	return s, first
}

// remove ends s; last is true when its key has no subscriber left.
func (m subscribers) remove(s *sub) (last bool) {
	set := m[s.dir]
	delete(set, s)
	if len(set) == 0 {
		delete(m, s.dir)
		return true
	}
	return false
}

// wake wakes every subscriber of key without blocking: a wake already pending is enough.
func (m subscribers) wake(key string) {
	for s := range m[key] {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}

// wakeAll wakes every subscriber.
func (m subscribers) wakeAll() {
	for key := range m {
		m.wake(key)
	}
}

// sharedHub holds a store's hub: started by the first watch, closed when the last watch ends or the
// store closes.
type sharedHub[H interface {
	comparable
	unsubscribe(*sub)
	close()
}] struct {
	mu    sync.Mutex
	hub   H
	users int
}

// use returns the hub, started by start when none runs; each use is ended by one release.
func (h *sharedHub[H]) use(start func() H) H {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub == none {
		h.hub = start()
	}
	h.users++
	return h.hub
}

// release ends one use, ending sb's subscription; the last use closes the hub.
func (h *sharedHub[H]) release(sb *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub == none {
		return
	}
	h.hub.unsubscribe(sb)
	if h.users--; h.users == 0 {
		h.hub.close()
		h.hub = none
	}
}

// do runs fn on the hub under the lock, when one runs.
func (h *sharedHub[H]) do(fn func(H)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub != none {
		fn(h.hub)
	}
}

// close closes the hub whatever its uses (the store's Close).
func (h *sharedHub[H]) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub != none {
		h.hub.close()
		h.hub, h.users = none, 0
	}
}
