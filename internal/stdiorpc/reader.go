package stdiorpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// JSON-RPC error codes the pipe answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// Read gives the SDK the next good line (with its line break), answering and skipping the others.
// At the end of input it first waits (EOFGrace at most) for the requests read to be answered.
func (p *Pipe) Read(b []byte) (int, error) {
	for len(p.pending) == 0 {
		if p.err != nil {
			if errors.Is(p.err, io.EOF) {
				p.drain()
				if p.opts.AtEOF != nil {
					p.opts.AtEOF()
					p.opts.AtEOF = nil // Read is called by one goroutine
				}
			}
			return 0, p.err
		}
		line, head, err := p.readLine()
		if err != nil {
			p.err = err
		}
		if errors.Is(err, errLineTooLong) {
			p.reply(CodeParseError, "Parse error: message longer than "+p.opts.LimitText, headID(head))
			p.err = nil
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			// Inside JSON strings invalid bytes decode to U+FFFD anyway; replaced here, an id the
			// SDK echoes back raw is valid JSON. Outside strings the line stays invalid JSON.
			line = validUTF8(line)
		}
		msg, code, text := check(line)
		if code == 0 && p.opts.Check != nil {
			if s := p.opts.Check(line); s != "" {
				code, text = CodeInvalidRequest, "Invalid Request: "+s
			}
		}
		if code != 0 {
			p.reply(code, text, msg.id())
			continue
		}
		if p.notARequest(msg) {
			continue
		}
		p.opened(msg)
		p.withdrawn(msg)
		p.pending = append(line, '\n')
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

var errLineTooLong = errors.New("line too long")

// headSize is how much of an overlong line is kept to find its id.
const headSize = 64 << 10

// readLine reads one line without its line break. A line over MaxLine is discarded up to its end
// and reported as errLineTooLong, with its first bytes as head.
func (p *Pipe) readLine() (line, head []byte, err error) {
	for {
		chunk, err := p.in.ReadSlice('\n')
		size := len(line) + len(chunk)
		if err == nil {
			size-- // the line break
		}
		if size > p.opts.MaxLine {
			head = append(line, chunk...)
			if len(head) > headSize {
				head = head[:headSize]
			}
			head = bytes.Clone(head)
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = p.in.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, nil, err
			}
			return nil, head, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) > 0 && errors.Is(err, io.EOF) {
			return line, nil, nil // last line without a break; EOF comes on the next read
		}
		return bytes.TrimRight(line, "\r\n"), nil, err
	}
}

// message is what the pipe reads of a JSON-RPC message.
type message struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Params  json.RawMessage `json:"params"`
	method  string
}

// id is the message's id, re-encoded, when it is a string or a number; nil otherwise.
func (m message) id() json.RawMessage {
	v, ok := idValue(m.ID)
	if !ok {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// idValue decodes a JSON-RPC id: a string or a number (kept as written).
func idValue(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	switch v.(type) {
	case string, json.Number:
		return v, true
	}
	return nil, false
}

// check returns the message, or a JSON-RPC error code and message for a line the SDK must not see.
func check(line []byte) (message, int64, string) {
	var m message
	trimmed := bytes.TrimSpace(line)
	if err := json.Unmarshal(trimmed, &json.RawMessage{}); err != nil {
		// Nesting too deep, or garbage after the id: the id, read from the start, is answered.
		if len(trimmed) > headSize {
			trimmed = trimmed[:headSize]
		}
		m.ID = headID(trimmed)
		return m, CodeParseError, "Parse error: the message is not valid JSON: " + err.Error()
	}
	switch trimmed[0] {
	case '[':
		return m, CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per line"
	case '{':
	default:
		return m, CodeInvalidRequest, "Invalid Request: a message must be a JSON object"
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, CodeInvalidRequest, "Invalid Request: " + err.Error()
	}
	if string(m.JSONRPC) != `"2.0"` {
		return m, CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`
	}
	if len(m.ID) > 0 && string(m.ID) != "null" {
		if _, ok := idValue(m.ID); !ok {
			return message{}, CodeInvalidRequest, "Invalid Request: an id must be a string or a number"
		}
	}
	if len(m.Method) > 0 {
		if json.Unmarshal(m.Method, &m.method) != nil {
			return m, CodeInvalidRequest, "Invalid Request: the method must be a string"
		}
	}
	if m.method == "" && m.Result == nil && m.Error == nil {
		return m, CodeInvalidRequest, "Invalid Request: a message needs a method (request or notification), or a result or an error (response)"
	}
	return m, 0, ""
}

// notARequest handles a request method (Options.Request) sent without an id or with "id":null,
// which the SDK would run as a notification: it is dropped with a warning, or answered -32600 when
// its id is null. It reports whether the message was taken out.
func (p *Pipe) notARequest(m message) bool {
	if m.method == "" || p.opts.Request == nil || (len(m.ID) > 0 && string(m.ID) != "null") || !p.opts.Request(m.method) {
		return false
	}
	if len(m.ID) == 0 {
		p.opts.Logger.Warn("dropped a request sent without an id: JSON-RPC gives no answer to a notification, and this method is only run as a request; send it with an id",
			"method", m.method)
		return true
	}
	p.reply(CodeInvalidRequest, "Invalid Request: the id of "+strconv.Quote(m.method)+" is null: a request needs a string or number id", nil)
	return true
}

// idKey is one form for equal ids however they are written (1, 1.0; "a", "\u0061").
func idKey(v any) string {
	switch v := v.(type) {
	case string:
		return "s" + v
	case json.Number:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return "n" + strconv.FormatFloat(f, 'g', -1, 64)
		}
		return "n" + string(v)
	case float64:
		return "n" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

// opened counts a request the end of input waits for.
func (p *Pipe) opened(m message) {
	if m.method == "" || (p.opts.WaitFor != nil && !p.opts.WaitFor(m.method)) {
		return
	}
	v, ok := idValue(m.ID)
	if !ok {
		return // a notification
	}
	key := idKey(v)
	p.mu.Lock()
	r := p.open[key]
	r.method, r.n = m.method, r.n+1
	p.open[key] = r
	p.mu.Unlock()
}

// withdrawn marks the request a CancelMethod notification names, while it is open, so that its
// answer is not written.
func (p *Pipe) withdrawn(m message) {
	if p.opts.CancelMethod == "" || m.method != p.opts.CancelMethod || len(m.ID) > 0 {
		return
	}
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &params) != nil {
		return
	}
	v, ok := idValue(params.RequestID)
	if !ok {
		return
	}
	key := idKey(v)
	p.mu.Lock()
	if r, ok := p.open[key]; ok && p.dropped[key] < r.n {
		p.dropped[key]++
	}
	p.mu.Unlock()
}

// headID finds the id of an overlong message in its first bytes: every SDK writes "jsonrpc" and
// "id" before the params. It is nil when the id does not come before the cut.
func headID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k == "id" {
			v, err := dec.Token()
			if err != nil {
				return nil
			}
			switch v.(type) {
			case string, json.Number:
				b, _ := json.Marshal(v)
				return b
			}
			return nil
		}
		if err := skipValue(dec); err != nil {
			return nil
		}
	}
	return nil
}

// skipValue reads one JSON value from dec.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// drain waits until every counted request has been answered, for at most EOFGrace, or until the
// pipe's context ends. When it returns, the SDK sees the end of input and cancels what still runs.
func (p *Pipe) drain() {
	n, changed := p.unanswered()
	if n == 0 {
		return
	}
	t := time.NewTimer(p.opts.EOFGrace)
	defer t.Stop()
	for n > 0 {
		select {
		case <-changed:
		case <-t.C:
			p.opts.Logger.Warn("the client closed stdin; cancelling the calls still running", "calls", n, "grace", p.opts.EOFGrace)
			return
		case <-p.ctx.Done():
			return
		}
		n, changed = p.unanswered()
	}
}

// reply writes one of the pipe's own error answers.
func (p *Pipe) reply(code int64, text string, id json.RawMessage) {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, text}})
	if err != nil {
		return
	}
	p.lock.lock(0)
	_, _ = p.out.Write(append(data, '\n'))
	p.lock.unlock()
}

// validUTF8 replaces each byte of an invalid UTF-8 sequence with U+FFFD, as a JSON decoder does.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
