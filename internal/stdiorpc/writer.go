package stdiorpc

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Write writes one message of the SDK (each SDK writes a message in one call). A response settles
// the request it answers, and runs the hooks waiting for it; the answer to a request the client
// withdrew (Options.CancelMethod) settles it without being written.
func (p *Pipe) Write(b []byte) (int, error) {
	id, response, ok := head(b)
	key := ""
	if ok && response {
		key = idKey(id)
	}
	drop := p.takeDropped(key)
	n, err := len(b), error(nil)
	if drop {
		p.opts.Logger.Debug("not answering a request the client cancelled", "id", id)
	} else {
		p.lock.lock(0)
		n, err = p.out.Write(b)
		p.lock.unlock()
	}
	if key == "" {
		return n, err
	}
	p.mu.Lock()
	if r, ok := p.open[key]; ok {
		if r.n--; r.n == 0 {
			delete(p.open, key)
		} else {
			p.open[key] = r
		}
		// A withdrawal read while this answer was on its way out withdrew nothing.
		if p.dropped[key] > r.n {
			p.dropped[key] = r.n
		}
		if p.dropped[key] == 0 {
			delete(p.dropped, key)
		}
		close(p.changed)
		p.changed = make(chan struct{})
	}
	if len(p.hooks) == 0 || drop {
		p.mu.Unlock()
		return n, err
	}
	var fire []func()
	for key, f := range p.hooks {
		if bytes.Contains(b, []byte(key)) && isSuccess(b) {
			fire = append(fire, f)
			delete(p.hooks, key)
		}
	}
	p.running += len(fire)
	p.mu.Unlock()
	for _, f := range fire {
		// The SDK may hold its write lock while we are here: a hook that writes must not run inline.
		go func() {
			defer p.hookDone()
			f()
		}()
	}
	return n, err
}

// takeDropped reports whether the answer to request key is one not to write (its request was
// withdrawn), and counts it as taken.
func (p *Pipe) takeDropped(key string) bool {
	if key == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped[key] == 0 {
		return false
	}
	p.dropped[key]--
	return true
}

// hookDone counts a fired hook as returned and wakes the end-of-input drain.
func (p *Pipe) hookDone() {
	p.mu.Lock()
	p.running--
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// WriteRank writes whole notification lines a server encoded itself (never a response). rank
// orders it among waiting writers: see rankLock.
func (p *Pipe) WriteRank(rank uint64, b []byte) error {
	p.lock.lock(rank)
	defer p.lock.unlock()
	_, err := p.out.Write(b)
	return err
}

// AfterResponse runs f (in its own goroutine) once a successful response containing match has
// been written. Editors drop updates for a session they have not heard of, and no SDK says when a
// response has gone out; this is how a server learns it.
func (p *Pipe) AfterResponse(match string, f func()) {
	p.mu.Lock()
	p.hooks[match] = f
	p.mu.Unlock()
}

// head reads the first keys of an outgoing message: its id, and whether it is a response (a
// "result" or an "error" comes before any "method"). The SDKs write "jsonrpc" and "id" first, so
// a large result is not parsed.
func head(p []byte) (id any, response, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false, false
	}
	for range 4 {
		k, err := dec.Token()
		if err != nil {
			return nil, false, false
		}
		switch k {
		case "result", "error":
			return id, true, true
		case "method":
			return id, false, true
		case "id":
			v, err := dec.Token()
			if err != nil {
				return nil, false, false
			}
			if _, nested := v.(json.Delim); nested {
				return nil, false, false
			}
			id = v
			continue
		}
		if err := skipValue(dec); err != nil {
			return nil, false, false
		}
	}
	return nil, false, false
}

// isSuccess says whether one JSON-RPC message is a successful response (an id and a result, no
// method).
func isSuccess(b []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	return json.Unmarshal(b, &m) == nil && m.Method == "" && len(m.ID) > 0 && len(m.Result) > 0
}

// rankLock serialises writes to the output and, when several wait, lets the one with the lowest
// rank go first: the SDK's messages (rank 0: responses, requests) before any stream, and a server
// can order its streams (acp serve: an older turn before a newer one).
//
// A plain mutex hands the pipe round-robin once writers queue (a client that decodes more slowly
// than the agent prints). Every running turn then advances at the same pace and they all end at
// once, each holding its whole reply at the same moment: 50 turns of 1 MB peaked at 97 MiB of
// live heap in acp serve. Served oldest first, turns end one after another and the others wait
// with their agent blocked on a full pipe, holding little. When the client keeps up, nobody
// waits and ranks do not matter.
type rankLock struct {
	mu      sync.Mutex
	busy    bool
	waiters []*rankWaiter
}

type rankWaiter struct {
	rank  uint64
	ready chan struct{}
}

func (l *rankLock) lock(rank uint64) {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return
	}
	w := &rankWaiter{rank: rank, ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	<-w.ready // the lock is handed over: busy stays true
}

func (l *rankLock) unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) == 0 {
		l.busy = false
		return
	}
	next := 0
	for i, w := range l.waiters {
		if w.rank < l.waiters[next].rank {
			next = i
		}
	}
	w := l.waiters[next]
	l.waiters = append(l.waiters[:next], l.waiters[next+1:]...)
	close(w.ready)
}
