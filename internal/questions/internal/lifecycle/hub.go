package lifecycle

import (
	"sync"
)

// Both stores share one watcher among all their waits (a hub: fsnotify for the file store, a bucket
// watcher for the NATS store). What a hub watches differs; how it is counted and how it wakes its
// subscribers is written once here.

// Sub is one subscription to a hub: its key (a watched directory, or a set id) and the channel it
// wakes.
type Sub struct {
	Key string
	C   chan struct{}
}

// Subscribers are a hub's subscriptions by key, used under the hub's lock.
type Subscribers map[string]map[*Sub]struct{}

// Add subscribes c to key; first is true when key had no subscriber yet.
func (m Subscribers) Add(key string, c chan struct{}) (s *Sub, first bool) {
	s = &Sub{Key: key, C: c}
	set := m[key]
	if set == nil {
		set = map[*Sub]struct{}{}
		m[key] = set
		first = true
	}
	set[s] = struct{}{}
	return s, first
}

// Remove ends s; last is true when its key has no subscriber left.
func (m Subscribers) Remove(s *Sub) (last bool) {
	set := m[s.Key]
	delete(set, s)
	if len(set) == 0 {
		delete(m, s.Key)
		return true
	}
	return false
}

// Wake wakes every subscriber of key without blocking: a wake already pending is enough.
func (m Subscribers) Wake(key string) {
	for s := range m[key] {
		select {
		case s.C <- struct{}{}:
		default:
		}
	}
}

// WakeAll wakes every subscriber.
func (m Subscribers) WakeAll() {
	for key := range m {
		m.Wake(key)
	}
}

// SharedHub holds a store's hub: started by the first watch, closed when the last watch ends or the
// store closes.
type SharedHub[H interface {
	comparable
	Unsubscribe(*Sub)
	Close()
}] struct {
	mu    sync.Mutex
	hub   H
	users int
}

// Use returns the hub, started by start when none runs; each use is ended by one release.
func (h *SharedHub[H]) Use(start func() H) H {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub == none {
		h.hub = start()
	}
	h.users++
	return h.hub
}

// Release ends one use, ending sb's subscription; the last use closes the hub.
func (h *SharedHub[H]) Release(sb *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub == none {
		return
	}
	h.hub.Unsubscribe(sb)
	if h.users--; h.users == 0 {
		h.hub.Close()
		h.hub = none
	}
}

// Do runs fn on the hub under the lock, when one runs.
func (h *SharedHub[H]) Do(fn func(H)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub != none {
		fn(h.hub)
	}
}

// Close closes the hub whatever its uses (the store's Close).
func (h *SharedHub[H]) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none H
	if h.hub != none {
		h.hub.Close()
		h.hub, h.users = none, 0
	}
}
