package questions

import (
	"context"
	"testing"
	"time"
)

// Changes wakes on a new set (asked by another store on the same sets, as by another process or
// machine), on an answer, and on a removal.
func TestStoreChanges(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		page := b.open(t, Options{})
		asker := b.open(t, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		ch, err := page.Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		woken := func(what string) {
			t.Helper()
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				t.Fatalf("no change reported after %s", what)
			}
			for len(ch) > 0 { // coalesced wakes of the same change
				<-ch
			}
		}
		sess := createIn(t, asker)
		woken("a new set")
		if _, err := asker.Answer(sess.ID, goodAnswers, ""); err != nil {
			t.Fatal(err)
		}
		woken("an answer")
		b.remove(t, sess.ID)
		woken("a removal")
	})
}
