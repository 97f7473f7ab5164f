package fakeqtest

import (
	"sync"
	"time"
)

// Clock is a clock for agent.Limits.Clock that moves only when the test advances it: a test of
// a timeout advances it past the timeout once the agent is where the test needs it (started, its
// partial reply out), however slow the machine, and waits for no real timeout. It reads the real
// time it was made at, plus what it was advanced by. Safe for use by several goroutines.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*clockTimer
}

type clockTimer struct {
	at time.Time
	on bool
	f  func()
}

// NewClock returns a Clock that reads the present time until it is advanced.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f in a goroutine of its own once the clock has been advanced by d, as
// time.AfterFunc does on the real clock; stop cancels the call and reports whether it was due.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &clockTimer{at: c.now.Add(d), on: true, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := t.on
		t.on = false
		return was
	}
}

// Advance moves the clock on by d and returns once the calls it made due have run; it returns
// how many there were.
func (c *Clock) Advance(d time.Duration) int {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.on && !t.at.After(c.now):
			t.on = false
			due = append(due, t.f)
		case t.on:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range due {
		wg.Go(f)
	}
	wg.Wait()
	return len(due)
}
