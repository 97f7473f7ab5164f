package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress sends a call's progress notifications from what happens in it: the first Update goes
// out at once, later ones no more often than every d.ProgressEvery (the latest message wins), and
// while nothing new happens a heartbeat from message keeps clients with a per-call timeout
// waiting. It is a no-op when the client gave no progress token.
type Progress struct {
	mu      sync.Mutex
	latest  string
	pending bool
	wake    chan struct{}
	stop    func()
}

// NewProgress starts the notifications of a call; Stop must be called before the handler returns.
func NewProgress(ctx context.Context, d *Deps, req *mcp.CallToolRequest, heartbeat func(elapsed time.Duration) string) *Progress {
	p := &Progress{wake: make(chan struct{}, 1), stop: func() {}}
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return p
	}
	every := d.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done, stopping := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		var last time.Time // the last notification; zero: none yet
		n := 0
		send := func(msg string) {
			n++
			last = time.Now()
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
			if err != nil && ctx.Err() == nil {
				d.App.Logger.Debug("progress notification failed", "error", err)
			}
		}
		timer := time.NewTimer(every)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-stopping:
				// The call ends. An agent that printed its first line and finished before it went
				// out still has it told: the client hears of every call that printed something.
				p.mu.Lock()
				msg, fresh := p.latest, p.pending
				p.mu.Unlock()
				if fresh && last.IsZero() {
					send(msg)
				}
				return
			case <-p.wake:
			case <-timer.C:
			}
			p.mu.Lock()
			msg, fresh := p.latest, p.pending
			p.mu.Unlock()
			since := time.Since(last)
			if last.IsZero() {
				since = time.Since(start)
			}
			switch {
			case fresh && (last.IsZero() || since >= every):
				p.mu.Lock()
				p.pending = false
				p.mu.Unlock()
				send(msg)
			case !fresh && since >= every:
				send(heartbeat(time.Since(start)))
			}
			// Next: the rest of the interval (an update waits for it, a heartbeat too).
			from := last
			if from.IsZero() {
				from = start
			}
			timer.Reset(max(every-time.Since(from), time.Millisecond))
		}
	}()
	p.stop = sync.OnceFunc(func() { close(stopping); <-done; cancel() })
	return p
}

// Update reports what the call is doing now.
func (p *Progress) Update(msg string) {
	p.mu.Lock()
	p.latest, p.pending = msg, true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop ends the notifications.
func (p *Progress) Stop() { p.stop() }
