package acpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// responseWatcher sits between the SDK and stdout and runs a hook once the response that carries a
// given session id has been written. Editors drop session updates for a session they do not know
// yet (Zed drops those sent before the session/new response), and the SDK offers no "response
// sent" event, so this is where we learn it: the SDK writes each message with one Write call.
//
// It is also the one way to stdout for lines qkit encodes itself (writeLines): out keeps them and
// the SDK's messages whole and apart.
type responseWatcher struct {
	w   io.Writer
	out outLock

	mu    sync.Mutex
	hooks map[string]func() // by `"sessionId":"<id>"` as it appears in the response
	// onWrite, when set, sees every message the SDK writes (after it is written).
	onWrite func([]byte)
}

func newResponseWatcher(w io.Writer) *responseWatcher {
	return &responseWatcher{w: w, hooks: map[string]func(){}}
}

// afterResponse runs f (in its own goroutine) once a response naming session id has been written.
func (r *responseWatcher) afterResponse(id string, f func()) {
	key, _ := json.Marshal(id)
	r.mu.Lock()
	r.hooks[`"sessionId":`+string(key)] = f
	r.mu.Unlock()
}

// writeLines writes whole JSON-RPC notification lines encoded by qkit (never a response); rank
// orders it among waiting writers (see outLock).
func (r *responseWatcher) writeLines(rank uint64, b []byte) error {
	r.out.lock(rank)
	defer r.out.unlock()
	_, err := r.w.Write(b)
	return err
}

func (r *responseWatcher) Write(b []byte) (int, error) {
	r.out.lock(0)
	n, err := r.w.Write(b)
	r.out.unlock()
	if r.onWrite != nil {
		r.onWrite(b)
	}
	r.mu.Lock()
	if len(r.hooks) == 0 {
		r.mu.Unlock()
		return n, err
	}
	var fire []func()
	for key, f := range r.hooks {
		if bytes.Contains(b, []byte(key)) && isResponse(b) {
			fire = append(fire, f)
			delete(r.hooks, key)
		}
	}
	r.mu.Unlock()
	for _, f := range fire {
		// The SDK holds its write lock while we are here: the hook sends, so it must not run inline.
		go f()
	}
	return n, err
}

// isResponse says whether one JSON-RPC message is a successful response (an id and a result, no
// method).
func isResponse(b []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	return json.Unmarshal(b, &m) == nil && m.Method == "" && len(m.ID) > 0 && len(m.Result) > 0
}
