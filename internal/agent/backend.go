package agent

import (
	"log/slog"
	"time"
)

// What the text runner does that another backend (the ACP client, internal/acpclient) must do the
// same way: the start error, the kept reply and its notices. Only wrappers live here, so each rule
// is still written once, beside Run. (Process groups are internal/procgroup's.)

// StartError explains why the agent command could not start, naming agent.command.
func StartError(command string, err error) error { return startError(command, err) }

// TimeoutNotice is what follows the partial reply of a run that hit its timeout d.
func TimeoutNotice(d time.Duration) string { return timeoutNotice(d) }

// Reply keeps the first limit bytes of a reply that arrives in pieces and counts the rest, as Run
// keeps stdout: memory stays flat whatever the agent sends. limit 0 keeps everything.
type Reply struct{ k keeper }

// NewReply returns a Reply that keeps limit bytes.
func NewReply(limit int64) *Reply { return &Reply{k: keeper{limit: limit}} }

// Write keeps what fits of p and counts all of it.
func (r *Reply) Write(p []byte) { r.k.Write(p) }

// Total is the size of everything written.
func (r *Reply) Total() int64 { return r.k.total }

// Finish fills res as Run does: Output (the kept reply, cut at a line break when it was
// truncated, followed by the notices), Notice, Truncated and OriginalSize, and logs the cut and the
// timeout on log (nil: not logged) as Run does. timeout is the configured limit when the run timed
// out, 0 otherwise (then TimedOut is left alone).
func (r *Reply) Finish(res *Result, limit int64, timeout time.Duration, log *slog.Logger) {
	r.k.finish(res, limit, timeout, log)
}
