package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one inbound JSON-RPC message, as the SDK's own stdio transport does.
const maxLine = mcp.DefaultMaxLineLength

// DefaultEOFGrace is how long calls still running when the client closes stdin may take to finish
// (`qkit mcp serve --eof-grace`). MCP clients shut a stdio server down by closing its stdin, waiting
// (the TypeScript SDK waits 2 s), then sending SIGTERM, which cancels every call at once. The grace
// serves scripts that pipe requests in (`printf ... | qkit mcp serve`) and bounds how long a server
// whose client vanished keeps working: a call still running after it (an agent run, a question set
// waiting for the user) is cancelled, so the agent's process group is stopped and the question set
// marked abandoned.
const DefaultEOFGrace = 10 * time.Second

// Stdio is the transport `qkit mcp serve` uses: newline-delimited JSON-RPC on In and Out, like the
// SDK's StdioTransport, with two differences:
//   - a line that is not JSON, or not a JSON-RPC message, is answered with a JSON-RPC error (-32700
//     parse error, -32600 invalid request) and skipped; the SDK alone would end the session;
//   - at the end of input, requests already read get EOFGrace to be answered; then the calls still
//     running are cancelled and the session ends.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// EOFGrace is how long running calls may take to finish once In ends (usually
	// DefaultEOFGrace); 0 cancels them at once.
	EOFGrace time.Duration
	// Logger receives a warning when calls are cancelled at the end of input; nil discards it.
	Logger *slog.Logger
}

// Connect implements mcp.Transport.
func (t *Stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: t.Out, answered: make(chan struct{}, 1)}
	g := &guardReader{ctx: ctx, in: bufio.NewReaderSize(t.In, 64<<10), out: w, grace: t.EOFGrace, log: log}
	inner := &mcp.IOTransport{Reader: io.NopCloser(g), Writer: w, MaxLineLength: -1} // g bounds lines
	return inner.Connect(ctx)
}

// lockedWriter serialises writes so that error answers never interleave with the SDK's messages
// (each of which it writes in one call), and counts the responses written.
type lockedWriter struct {
	mu       sync.Mutex
	w        io.Writer
	open     int // requests read and not yet answered
	answered chan struct{}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if isResponse(p) && l.open > 0 {
		l.open--
		select {
		case l.answered <- struct{}{}:
		default:
		}
	}
	return l.w.Write(p)
}

// writeError writes one of the guard's own error answers, which answer no counted request.
func (l *lockedWriter) writeError(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
}

func (l *lockedWriter) opened(n int) {
	l.mu.Lock()
	l.open += n
	l.mu.Unlock()
}

func (l *lockedWriter) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// isResponse reports whether an outgoing message answers a request. The SDK writes "jsonrpc", "id",
// then "method" for requests and notifications, or "result"/"error" for responses; only those first
// keys are read, so a large result is not parsed again.
func isResponse(p []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(p))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for range 3 {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		switch k {
		case "result", "error":
			return true
		case "method":
			return false
		}
		v, err := dec.Token()
		if _, nested := v.(json.Delim); err != nil || nested {
			return false
		}
	}
	return false
}

// requests counts the requests (messages with a method and an id) in a good line: 0 or 1.
func requests(line []byte) int {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) == nil && m.Method != "" && m.ID != nil && string(m.ID) != "null" {
		return 1
	}
	return 0
}

func (l *lockedWriter) Close() error { return nil }

// guardReader passes valid JSON-RPC lines through and answers the others itself.
type guardReader struct {
	ctx     context.Context
	in      *bufio.Reader
	out     *lockedWriter
	grace   time.Duration
	log     *slog.Logger
	pending []byte
	err     error
}

func (g *guardReader) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			if errors.Is(g.err, io.EOF) {
				g.drain()
			}
			return 0, g.err
		}
		line, err := readLine(g.in)
		if err != nil {
			g.err = err
		}
		if errors.Is(err, errLineTooLong) {
			g.reply(jsonrpc.CodeParseError, "Parse error: message longer than 16 MiB", nil)
			g.err = nil
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if code, msg, id := check(line); code != 0 {
			g.reply(code, msg, id)
			continue
		}
		g.out.opened(requests(line))
		g.pending = append(line, '\n')
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its line break. A line over maxLine is discarded up to its end
// and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) > 0 && errors.Is(err, io.EOF) {
			return line, nil // last line without a break; EOF comes on the next read
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// check returns a JSON-RPC error code, message and request id for a line the SDK must not see,
// or code 0 for a good one.
func check(line []byte) (int64, string, any) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error: the message is not valid JSON", nil
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] == '[' {
		// Batches were removed from MCP in 2025-06-18, and the SDK ends the session on one.
		return jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per line", nil
	}
	var probe struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(trimmed, &probe)
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: " + err.Error(), probe.ID
	}
	if probe.Method == "" && probe.Result == nil && probe.Error == nil {
		// The SDK would take it for a response to nothing and drop it without a word.
		return jsonrpc.CodeInvalidRequest, "Invalid Request: a message needs a method (request or notification), or a result or an error (response)", probe.ID
	}
	return 0, "", nil
}

// drain waits until every request read has been answered, for at most g.grace, or until the
// context is done. When it returns, the SDK sees the end of input and cancels what still runs.
func (g *guardReader) drain() {
	if g.out.pending() == 0 {
		return
	}
	t := time.NewTimer(g.grace)
	defer t.Stop()
	for g.out.pending() > 0 {
		select {
		case <-g.out.answered:
		case <-t.C:
			g.log.Warn("the client closed stdin; cancelling the calls still running", "calls", g.out.pending(), "grace", g.grace)
			return
		case <-g.ctx.Done():
			return
		}
	}
}

func (g *guardReader) reply(code int64, msg string, id any) {
	resp := map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	}
	data, err := json.Marshal(resp)
	if err != nil {
		return
	}
	g.out.writeError(append(data, '\n'))
}
