package acpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// eofHold sits between stdin and the SDK. When stdin ends it holds the end back until every
// request read so far, other than session/prompt, has been answered (or grace has passed), so a
// script that pipes its requests in and closes stdin still gets the answers. Running prompts are
// not waited for: the end of stdin cancels them, as it always did.
type eofHold struct {
	r     io.Reader
	grace time.Duration

	mu      sync.Mutex
	partial []byte
	pending map[string]bool // ids of requests not answered yet
	inits   map[string]bool // ids of initialize requests not answered yet
	changed chan struct{}   // closed and replaced whenever pending shrinks
}

func newEOFHold(r io.Reader, grace time.Duration) *eofHold {
	return &eofHold{r: r, grace: grace, pending: map[string]bool{}, inits: map[string]bool{}, changed: make(chan struct{})}
}

type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (h *eofHold) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.mu.Lock()
	h.partial = append(h.partial, p[:n]...)
	for {
		i := bytes.IndexByte(h.partial, '\n')
		if i < 0 {
			break
		}
		var m rpcHead
		if json.Unmarshal(h.partial[:i], &m) == nil && len(m.ID) > 0 && m.Method != "" && m.Method != "session/prompt" {
			h.pending[string(m.ID)] = true
			if m.Method == "initialize" {
				h.inits[string(m.ID)] = true
			}
		}
		h.partial = h.partial[i+1:]
	}
	h.mu.Unlock()
	if err == io.EOF {
		h.wait()
	}
	return n, err
}

// wait blocks until no request is pending or grace has passed.
func (h *eofHold) wait() {
	deadline := time.NewTimer(h.grace)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		empty, changed := len(h.pending) == 0, h.changed
		h.mu.Unlock()
		if empty {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		}
	}
}

// answered notes a message qkit wrote: a response (an id, no method) settles its request.
func (h *eofHold) answered(b []byte) {
	var m rpcHead
	if json.Unmarshal(b, &m) != nil || len(m.ID) == 0 || m.Method != "" {
		return
	}
	h.mu.Lock()
	if h.pending[string(m.ID)] {
		delete(h.pending, string(m.ID))
		delete(h.inits, string(m.ID))
		close(h.changed)
		h.changed = make(chan struct{})
	}
	h.mu.Unlock()
}

// initialized waits until every initialize request read so far has been answered (or ctx ends):
// the SDK handles requests concurrently, and a session request piped in right after initialize
// must not be refused because the login check has not finished yet.
func (h *eofHold) initialized(ctx context.Context) {
	for {
		h.mu.Lock()
		empty, changed := len(h.inits) == 0, h.changed
		h.mu.Unlock()
		if empty {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
