package agent

import (
	"context"
	"time"
)

// Clock is what a run's Limits.Timeout is counted on (Limits.Clock). Its methods have the
// signatures of the time package's, so a test's clock needs to import nothing of this package.
type Clock interface {
	// Now is the clock's present time.
	Now() time.Time
	// AfterFunc calls f in a goroutine of its own once d has passed on the clock, as
	// time.AfterFunc does; stop cancels the call and reports whether it had not yet happened.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// now is the present time on l's clock.
func (l Limits) now() time.Time {
	if l.Clock == nil {
		return time.Now()
	}
	return l.Clock.Now()
}

// runContext is the context of a run that starts at now and must end at end: context.WithDeadline
// on the real clock; on l.Clock, a context that ends with ctx, or with the cause
// context.DeadlineExceeded once end-now has passed on that clock.
func (l Limits) runContext(ctx context.Context, now, end time.Time) (context.Context, context.CancelFunc) {
	if l.Clock == nil {
		return context.WithDeadline(ctx, end)
	}
	c, cancel := context.WithCancelCause(ctx)
	stop := l.Clock.AfterFunc(end.Sub(now), func() { cancel(context.DeadlineExceeded) })
	return c, func() { stop(); cancel(context.Canceled) }
}
