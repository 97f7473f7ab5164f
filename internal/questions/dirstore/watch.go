package dirstore

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// hub shares one fsnotify watcher among every wait of a Store: a server waiting on a hundred
// sessions holds one inotify instance (the default per-user limit is 128), not a hundred.
type hub struct {
	w *fsnotify.Watcher // nil when file events are unavailable
	// wmu orders subscribing and unsubscribing with the watcher's Add and Remove. mu guards subs
	// and is never held across a call into the watcher: fsnotify's reader holds its own lock
	// while it hands run an event, and run takes mu to wake the subscribers, so Add or Remove
	// under mu could wait on the reader while the reader waits on run.
	wmu  sync.Mutex
	mu   sync.Mutex
	subs lifecycle.Subscribers // by watched directory
	done chan struct{}
}

func newHub() *hub {
	h := &hub{subs: lifecycle.Subscribers{}, done: make(chan struct{})}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		close(h.done)
		return h
	}
	h.w = w
	go h.run()
	return h
}

func (h *hub) run() {
	defer close(h.done)
	for {
		select {
		case ev, ok := <-h.w.Events:
			if !ok {
				return
			}
			h.notify(filepath.Dir(ev.Name))
			h.notify(ev.Name) // the watched directory itself was removed or renamed
		case _, ok := <-h.w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: wake everyone to re-check.
			h.notifyAll()
		}
	}
}

func (h *hub) notify(dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs.Wake(dir)
}

func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs.WakeAll()
}

// subscribe wakes the returned sub on every change inside dir. watching is false when no events can
// be had for dir; the caller then relies on polling.
func (h *hub) subscribe(dir string) (s *lifecycle.Sub, watching bool) {
	return h.subscribeTo(dir, make(chan struct{}, 1))
}

// subscribeTo is subscribe waking c, which several subscriptions may share.
func (h *hub) subscribeTo(dir string, c chan struct{}) (s *lifecycle.Sub, watching bool) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.mu.Lock()
	s, first := h.subs.Add(dir, c)
	h.mu.Unlock()
	if first && (h.w == nil || h.w.Add(dir) != nil) {
		return s, false
	}
	return s, h.w != nil && watched(h.w, dir)
}

func watched(w *fsnotify.Watcher, dir string) bool {
	for _, d := range w.WatchList() {
		if d == dir {
			return true
		}
	}
	return false
}

func (h *hub) Unsubscribe(s *lifecycle.Sub) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.mu.Lock()
	last := h.subs.Remove(s)
	h.mu.Unlock()
	if last && h.w != nil {
		_ = h.w.Remove(s.Key)
	}
}

func (h *hub) Close() {
	if h.w != nil {
		_ = h.w.Close()
	}
	<-h.done
}

// useHub returns the store's hub, started on first use; each use is ended by one unwatch.
func (s *Store) useHub() *hub {
	return s.hubs.Use(newHub)
}

func (s *Store) watch(dir string) (*lifecycle.Sub, time.Duration) {
	sb, watching := s.useHub().subscribe(dir)
	poll := s.poll
	if poll <= 0 {
		poll = time.Minute
		if !watching {
			poll = time.Second
		}
	}
	return sb, poll
}

// watchInto is watch waking c (see Store.Changes).
func (s *Store) watchInto(dir string, c chan struct{}) *lifecycle.Sub {
	sb, _ := s.useHub().subscribeTo(dir, c)
	return sb
}

func (s *Store) unwatch(sb *lifecycle.Sub) {
	s.hubs.Release(sb)
}
