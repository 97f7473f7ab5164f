package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StartProgress sends a progress notification every d.ProgressEvery (5 s by default) while a call
// runs, when the client gave a progress token: clients with a per-call timeout then keep waiting.
// message is asked for the text of each notification. The returned stop ends the notifications
// and must be called before the handler returns.
func StartProgress(ctx context.Context, d *Deps, req *mcp.CallToolRequest, message func(elapsed time.Duration) string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	every := d.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				n++
				elapsed := time.Since(start)
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(n), Message: message(elapsed),
				})
				if err != nil && ctx.Err() == nil {
					d.App.Logger.Debug("progress notification failed", "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
