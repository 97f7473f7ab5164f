package questionsweb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// snapshot is what the page shows: the open sets, and how the sets that were open have ended.
type snapshot struct {
	open   []*questions.Session
	closed map[string]string // id -> what became of it, for the person
	ended  map[string]string // id -> its status now (completed, rejected, …, or removed), for its badge
}

// feed re-reads the store when it changes and hands the newest snapshot to every open page. It
// reads once per change however many pages are open, and does nothing while nothing changes.
type feed struct {
	st  questions.Store
	log *slog.Logger

	mu      sync.Mutex
	cur     *snapshot
	subs    map[chan *snapshot]struct{}
	closed  map[string]string // cumulative, so a page that missed a snapshot still learns the outcome
	ended   map[string]string // cumulative too: the status each closed set ended in
	wasOpen map[string]bool
	wg      sync.WaitGroup
}

func newFeed(st questions.Store, log *slog.Logger) *feed {
	return &feed{st: st, log: log, subs: map[chan *snapshot]struct{}{}, closed: map[string]string{}, ended: map[string]string{}, wasOpen: map[string]bool{}}
}

func (f *feed) start(ctx context.Context) error {
	changes, err := f.st.Changes(ctx)
	if err != nil {
		return err
	}
	f.refresh()
	f.wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
				f.refresh()
			}
		}
	})
	return nil
}

func (f *feed) wait() { f.wg.Wait() }

// refresh reads the store and hands the snapshot to every subscriber; one that has not taken the
// previous snapshot yet gets this one instead (only the newest matters).
func (f *feed) refresh() {
	all, err := f.st.List()
	if err != nil {
		f.log.Warn("reading the question sets failed", "error", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	snap := &snapshot{closed: f.closed}
	open := map[string]bool{}
	byID := map[string]*questions.Session{}
	for _, sess := range all {
		byID[sess.ID] = sess
		if sess.Status.Status.Open() && sess.Request != nil {
			snap.open = append(snap.open, sess)
			open[sess.ID] = true
		}
	}
	if len(f.closed) > 1000 {
		f.closed, f.ended = map[string]string{}, map[string]string{}
	}
	for id := range f.wasOpen {
		if open[id] {
			continue
		}
		if sess := byID[id]; sess != nil {
			f.closed[id] = "This question set was " + closedWords(sess.Status.Status) + "."
			f.ended[id] = string(sess.Status.Status)
		} else {
			f.closed[id] = "This question set was removed."
			f.ended[id] = "removed"
		}
	}
	f.wasOpen = open
	snap.closed, snap.ended = maps.Clone(f.closed), maps.Clone(f.ended)
	f.cur = snap
	for c := range f.subs {
		select {
		case <-c:
		default:
		}
		c <- snap
	}
}

func (f *feed) subscribe() (chan *snapshot, *snapshot) {
	c := make(chan *snapshot, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[c] = struct{}{}
	return c, f.cur
}

func (f *feed) unsubscribe(c chan *snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, c)
}

// events streams the open sets to one page: a "set" event with the rendered set for each set that
// is new or changed, then a "sync" event naming the open sets and how the others ended. When the
// server stops, a "bye" event tells the page so.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	forms, ok := s.access(r)
	if !ok {
		http.Error(w, noToken, http.StatusUnauthorized)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	c, snap := s.feed.subscribe()
	defer s.feed.unsubscribe(c)
	sent := map[string]string{} // id -> version the page has
	send := func(snap *snapshot) error {
		var buf bytes.Buffer
		ids := []string{}
		seen := map[string]bool{}
		for _, sess := range snap.open {
			v := s.view(sess, forms[0])
			ids = append(ids, v.ID)
			seen[v.ID] = true
			if sent[v.ID] == v.Version {
				continue
			}
			var html bytes.Buffer
			if err := pages().ExecuteTemplate(&html, "set", v); err != nil {
				return err
			}
			event(&buf, "set", map[string]any{"id": v.ID, "version": v.Version, "html": html.String()})
			sent[v.ID] = v.Version
		}
		for id := range sent {
			if !seen[id] {
				delete(sent, id)
			}
		}
		event(&buf, "sync", map[string]any{"open": ids, "closed": snap.closed, "ended": snap.ended})
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if snap != nil {
		if err := send(snap); err != nil {
			return
		}
	} else {
		fl.Flush()
	}
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			// The server is stopping (or the page went): say so, in case the page is still there.
			_, _ = fmt.Fprint(w, "event: bye\ndata: {}\n\n")
			fl.Flush()
			return
		case snap := <-c:
			if err := send(snap); err != nil {
				return
			}
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func event(buf *bytes.Buffer, name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(buf, "event: %s\ndata: %s\n\n", name, b)
}
