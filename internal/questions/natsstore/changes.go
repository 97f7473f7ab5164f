package natsstore

import (
	"context"
)

// Changes reports changes to the bucket (see dirstore.Store.Changes), from the store's one key watcher.
func (s *Store) Changes(ctx context.Context) (<-chan struct{}, error) {
	sb := s.watch("")
	out := make(chan struct{}, 1)
	go func() {
		defer s.unwatch(sb)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sb.C:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
