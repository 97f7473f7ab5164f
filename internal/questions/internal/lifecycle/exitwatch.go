package lifecycle

import (
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// ExitWatches lets a wait for a pending set learn that a claim has lapsed without re-reading the
// store on a timer. A claim lapses without any write: its terminal dies (on this machine), or its
// lease runs out (a terminal elsewhere). The first is watched (see watchExit); the second, and a
// local terminal that cannot be watched, are looked at again when they may have lapsed.
type ExitWatches struct {
	Wake  chan struct{} // gets a value when a watched terminal has exited
	stops map[questions.Process]func()
}

func NewExitWatches() *ExitWatches {
	return &ExitWatches{Wake: make(chan struct{}, 1), stops: map[questions.Process]func(){}}
}

// LocalClaimRecheck is how often a claim by a terminal on this machine is looked at again when its
// exit cannot be watched (no pidfd: not Linux, or an old kernel).
var LocalClaimRecheck = 2 * time.Second

// Claims watches the terminals holding claims among all (and stops watching the others) and says
// when to look again without an event: at the earliest lease end of a claim from elsewhere, or
// after localClaimRecheck for a local terminal that cannot be watched; -1 for never.
func (w *ExitWatches) Claims(all []*questions.Session, now time.Time) time.Duration {
	next := time.Duration(-1)
	soonest := func(d time.Duration) {
		if next < 0 || d < next {
			next = d
		}
	}
	keep := map[questions.Process]bool{}
	for _, sess := range all {
		c := sess.Status.Claim
		if c == nil || !sess.Status.Status.Open() {
			continue
		}
		if !c.By.Local() {
			soonest(max(c.Since.Add(ClaimLease).Sub(now)+time.Second, 0))
			continue
		}
		keep[c.By] = true
		if _, on := w.stops[c.By]; on {
			if c.By.Gone() {
				soonest(0) // exited, yet still claiming: settle it on the next read
			}
			continue
		}
		stop, ok := watchExit(c.By, w.signal)
		if !ok {
			soonest(LocalClaimRecheck)
			continue
		}
		w.stops[c.By] = stop
	}
	for p, stop := range w.stops {
		if !keep[p] {
			stop()
			delete(w.stops, p)
		}
	}
	return next
}

func (w *ExitWatches) signal() {
	select {
	case w.Wake <- struct{}{}:
	default:
	}
}

// Close stops every watch.
func (w *ExitWatches) Close() {
	for p, stop := range w.stops {
		stop()
		delete(w.stops, p)
	}
}
