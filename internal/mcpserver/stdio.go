package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/stdiorpc"
)

// maxLine bounds one inbound JSON-RPC message, as the SDK's own stdio transport does.
const maxLine = mcp.DefaultMaxLineLength

// DefaultEOFGrace is how long calls still running when the client closes stdin may take to finish
// (`qkit mcp serve --eof-grace`). It serves scripts that pipe requests in (`printf ... | qkit mcp
// serve`), which read the answers the grace lets finish, and bounds how long a server whose client
// vanished keeps working: a call still running after it (an agent run, a question set waiting for
// the user) is cancelled, so the question set is marked abandoned, and `mcp serve` stops every
// process it started at once (Stdio.AtEOF). An SDK client reads no answer after its close: it
// closes stdin, waits (the TypeScript SDK 2 s), then sends SIGTERM, which stops every process at
// once (SIGKILL after procgroup.ShutdownGrace), so the server is gone before the SDK's SIGKILL
// 2 s later.
const DefaultEOFGrace = 10 * time.Second

// Stdio is the transport `qkit mcp serve` uses: newline-delimited JSON-RPC on In and Out, like the
// SDK's StdioTransport, through qkit's shared stdio plumbing (internal/stdiorpc):
//   - a line that is not JSON, or not a JSON-RPC message, or longer than 16 MiB is answered with a
//     JSON-RPC error (-32700 parse error, -32600 invalid request) and skipped; the SDK alone would
//     end the session;
//   - at the end of input, requests already read get EOFGrace to be answered; then the calls still
//     running are cancelled and the session ends;
//   - a request sent without an id is dropped with a warning, and one with "id":null is answered
//     -32600 (the SDK drops both without a word);
//   - a request the client cancelled (notifications/cancelled) while it ran gets no response.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// EOFGrace is how long running calls may take to finish once In ends (usually
	// DefaultEOFGrace); 0 cancels them at once.
	EOFGrace time.Duration
	// Logger receives a warning when calls are cancelled at the end of input; nil discards it.
	Logger *slog.Logger
	// AtEOF is called when the grace is over, before the calls still running are cancelled:
	// `qkit mcp serve` passes procgroup.Shutdown, so every process it started gets SIGTERM at
	// once rather than each call's gentle stop. nil (tests sharing one process) leaves the stops
	// to the calls' cancellation.
	AtEOF func()
}

// Connect implements mcp.Transport.
func (t *Stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	p := stdiorpc.New(ctx, t.In, t.Out, stdiorpc.Options{
		MaxLine:  maxLine,
		EOFGrace: t.EOFGrace,
		Check:    checkMCP,
		Logger:   t.Logger,
		AtEOF:    t.AtEOF,
		// The SDK cancels the handler of a call the client cancelled but still sends its
		// result; MCP says a cancelled request gets no response.
		CancelMethod: "notifications/cancelled",
		// Every MCP notification is named notifications/…; any other method is a request. The
		// SDK drops one sent without an id (or with "id":null) without a word; the pipe says so
		// on stderr, and answers the null id with -32600.
		Request: func(method string) bool { return !strings.HasPrefix(method, "notifications/") },
	})
	inner := &mcp.IOTransport{Reader: io.NopCloser(p), Writer: p, MaxLineLength: -1} // p bounds lines
	return inner.Connect(ctx)
}

// checkMCP refuses what the SDK's decoder would end the session on.
func checkMCP(line []byte) string {
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return err.Error()
	}
	return ""
}
