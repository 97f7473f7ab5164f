// Package stdiorpc is the stdin/stdout plumbing of qkit's JSON-RPC servers (`qkit mcp serve` and
// `qkit acp serve`): it sits between the process's streams and a protocol SDK, which reads and
// writes newline-delimited JSON-RPC through it. It adds what the SDKs lack, once for both:
//
//   - every inbound line is checked first; a line that is not JSON (garbage, nesting too deep),
//     not a JSON-RPC 2.0 message, a batch, or longer than MaxLine is answered with a JSON-RPC
//     error (-32700 parse error, -32600 invalid request) and skipped, and the session carries on
//     (the SDKs alone end the session or drop the line without a word);
//   - a request method sent without an id, or with "id":null, is not run (Options.Request);
//   - invalid UTF-8 is replaced with U+FFFD before the SDK sees the line, so an id echoed back is
//     valid JSON;
//   - at the end of input, the requests already read get a grace period to be answered before
//     the SDK sees the end (and cancels what still runs);
//   - writes are serialised (whole messages, never interleaved), ranked when several wait, and
//     watched: a hook can run once a given response has been written.
//
// It knows nothing of either protocol beyond JSON-RPC 2.0; a server adds its own rules through
// Options.
package stdiorpc

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// Options configure a Pipe.
type Options struct {
	// MaxLine bounds one inbound message, without its line break. A longer line is answered with
	// a parse error naming the limit (and the request's id when it comes early in the line, as
	// every SDK writes it) and skipped.
	MaxLine int
	// LimitText is how the limit is named in that error ("16 MiB").
	LimitText string
	// EOFGrace is how long the requests still unanswered when input ends may take; then the SDK
	// sees the end of input. 0 lets it see the end at once.
	EOFGrace time.Duration
	// WaitFor says whether the end of input waits for the answer to a request of method; nil
	// waits for every request.
	WaitFor func(method string) bool
	// Check, when set, is a protocol's own test of a message that passed the JSON-RPC checks; a
	// non-empty message refuses the line with -32600 and that text.
	Check func(line []byte) string
	// Logger receives a warning when the grace ends with requests unanswered; nil discards it.
	Logger *slog.Logger
	// CancelMethod, when set, is the notification by which the client withdraws one of its
	// requests, naming it in params.requestId (MCP's notifications/cancelled). The answer to a
	// request withdrawn while it was still open is not written (MCP: the receiver does not
	// respond to a cancelled request); the request counts as answered all the same. Empty: every
	// answer is written (ACP's $/cancel_request still gets one).
	CancelMethod string
	// Request, when set, says whether method is one the server takes only as a request (one it
	// answers). Such a message without an id is dropped before the SDK sees it, with a warning
	// naming the method: JSON-RPC forbids answering a notification, and an SDK would run it as
	// one (ACP's runs notifications one at a time, so a prompt sent as one holds up every later
	// notification and response for the whole turn). With "id":null it is answered -32600 and
	// not run. Methods it says no to (the protocol's notifications, methods the server does not
	// know) pass as they came. nil passes every method.
	Request func(method string) bool

	// AtEOF, when set, is called once when input has ended and the wait for answers (EOFGrace) is
	// over, just before the SDK sees the end and cancels what still runs: `qkit mcp serve` stops
	// every process it started there (procgroup.Shutdown).
	AtEOF func()
}

// Pipe is one connection's plumbing: an io.Reader for the SDK (checked lines from the input) and
// an io.Writer for it (to the output). It is safe for concurrent use.
type Pipe struct {
	ctx  context.Context
	opts Options
	in   *bufio.Reader
	out  io.Writer
	lock rankLock

	mu      sync.Mutex
	open    map[string]openRequest // requests read and not answered, by canonical id
	dropped map[string]int         // open requests the client withdrew (CancelMethod): their answers are not written
	changed chan struct{}          // closed and replaced whenever open shrinks
	hooks   map[string]func()      // run once a successful response containing the key is out
	running int                    // hooks fired and not yet returned: the end of input waits for them

	// reader state, touched only by Read (the SDK's one reading goroutine)
	pending []byte
	err     error
}

type openRequest struct {
	method string
	n      int
}

// New builds the plumbing between in, out and an SDK. ctx bounds the wait at the end of input.
func New(ctx context.Context, in io.Reader, out io.Writer, opts Options) *Pipe {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LimitText == "" {
		opts.LimitText = sizeText(opts.MaxLine)
	}
	return &Pipe{
		ctx: ctx, opts: opts, in: bufio.NewReaderSize(in, 64<<10), out: out,
		open: map[string]openRequest{}, dropped: map[string]int{}, changed: make(chan struct{}), hooks: map[string]func(){},
	}
}

// Close does nothing: the process owns stdin and stdout. It lets a Pipe stand where an SDK
// wants an io.ReadWriteCloser.
func (p *Pipe) Close() error { return nil }

// Settled waits until every request of method read so far has been answered, or ctx ends. An SDK
// that handles requests concurrently may start a later request (a session piped in right behind
// initialize) before an earlier one has finished; this is how the later one waits.
func (p *Pipe) Settled(ctx context.Context, method string) {
	for {
		p.mu.Lock()
		busy := false
		for _, r := range p.open {
			if r.method == method {
				busy = true
				break
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Awaiting reports whether a request of method read so far (one the end of input waits for:
// Options.WaitFor) is still unanswered. An SDK that hands requests and notifications of a method
// to the same handler does not say which one it got; while the handler of a request runs, its
// request is awaiting an answer, and a notification's is not (unless a request of the same
// method is open at the same moment).
func (p *Pipe) Awaiting(method string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.open {
		if r.method == method {
			return true
		}
	}
	return false
}

// unanswered is how many counted requests wait for an answer, and how many hooks fired by an
// answer still run (what a hook writes, such as a session's first updates, belongs to the answer).
func (p *Pipe) unanswered() (int, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.running
	for _, r := range p.open {
		n += r.n
	}
	return n, p.changed
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && (n%(1<<20) == 0 || (n+1)%(1<<20) == 0):
		return strconv.Itoa((n+1)>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
