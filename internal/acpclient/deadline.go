package acpclient

import "time"

// Deadline is a turn's time limit that does not count the time it is paused (a person deciding a
// permission request): Run's own, for the other paths that run a turn of an ACP agent (the proxy).
type Deadline = pausableDeadline

// NewDeadline calls fire once d has passed, not counting the time it was paused.
func NewDeadline(d time.Duration, fire func()) *Deadline { return newPausableDeadline(d, fire) }

// Pause stops the clock until the matching Resume.
func (p *pausableDeadline) Pause() { p.pause() }

// Resume starts the clock again after Pause.
func (p *pausableDeadline) Resume() { p.resume() }

// Stop ends the deadline without firing.
func (p *pausableDeadline) Stop() { p.stop() }
