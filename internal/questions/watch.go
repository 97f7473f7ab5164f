package questions

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// hub shares one fsnotify watcher among every wait of a FileStore: a server waiting on a hundred
// sessions holds one inotify instance (the default per-user limit is 128), not a hundred.
type hub struct {
	w    *fsnotify.Watcher // nil when file events are unavailable
	mu   sync.Mutex
	subs map[string]map[*sub]struct{} // watched directory -> subscribers
	done chan struct{}
}

type sub struct {
	dir string
	c   chan struct{}
}

func newHub() *hub {
	h := &hub{subs: map[string]map[*sub]struct{}{}, done: make(chan struct{})}
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
	for s := range h.subs[dir] {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}

func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
}

// subscribe wakes the returned sub on every change inside dir. watching is false when no events can
// be had for dir; the caller then relies on polling.
func (h *hub) subscribe(dir string) (s *sub, watching bool) {
	return h.subscribeTo(dir, make(chan struct{}, 1))
}

// subscribeTo is subscribe waking c, which several subscriptions may share.
func (h *hub) subscribeTo(dir string, c chan struct{}) (s *sub, watching bool) {
	s = &sub{dir: dir, c: c}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[dir]
	if m == nil {
		if h.w == nil || h.w.Add(dir) != nil {
			m = map[*sub]struct{}{}
			h.subs[dir] = m
			m[s] = struct{}{}
			return s, false
		}
		m = map[*sub]struct{}{}
		h.subs[dir] = m
	}
	m[s] = struct{}{}
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

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[s.dir]
	delete(m, s)
	if len(m) == 0 {
		delete(h.subs, s.dir)
		if h.w != nil {
			_ = h.w.Remove(s.dir)
		}
	}
}

func (h *hub) close() {
	if h.w != nil {
		_ = h.w.Close()
	}
	<-h.done
}

// useHub returns the store's hub, started on first use; each use is ended by one unwatch.
func (s *FileStore) useHub() *hub {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil {
		s.hub = newHub()
	}
	s.users++
	return s.hub
}

func (s *FileStore) watch(dir string) (*sub, time.Duration) {
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

// watchInto is watch waking c (see FileStore.Changes).
func (s *FileStore) watchInto(dir string, c chan struct{}) *sub {
	sb, _ := s.useHub().subscribeTo(dir, c)
	return sb
}

func (s *FileStore) unwatch(sb *sub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil {
		return
	}
	s.hub.unsubscribe(sb)
	if s.users--; s.users == 0 {
		s.hub.close()
		s.hub = nil
	}
}
