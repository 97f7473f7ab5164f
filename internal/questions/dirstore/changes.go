package dirstore

import (
	"context"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Changes reports changes to the store, for a page that shows the open sets live: the returned
// channel receives (coalesced) whenever a set is created, changes status or goes, until ctx ends.
// The receiver re-reads what it shows (List). Nothing polls while file events work: the store's
// folder and every set's folder are watched by the store's one shared watcher.
func (s *Store) Changes(ctx context.Context) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	top, poll := s.watch(s.dir) // a set created or removed
	go func() {
		defer s.unwatch(top)
		// A set changes inside its own folder (status.json renamed): each one is watched too, with
		// subscriptions that wake the same channel as the top folder.
		dirs := map[string]*lifecycle.Sub{}
		defer func() {
			for _, sb := range dirs {
				s.unwatch(sb)
			}
		}()
		follow := func() {
			ids, _ := s.ids()
			seen := make(map[string]bool, len(ids))
			for _, id := range ids {
				seen[id] = true
				if dirs[id] == nil {
					dirs[id] = s.watchInto(filepath.Join(s.dir, id), top.C)
				}
			}
			for id, sb := range dirs {
				if !seen[id] {
					s.unwatch(sb)
					delete(dirs, id)
				}
			}
		}
		follow()
		var tick <-chan time.Time
		if poll < time.Minute { // no file events: poll, as waits do
			t := time.NewTicker(poll)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-top.C:
				follow()
			case <-tick:
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out, nil
}
