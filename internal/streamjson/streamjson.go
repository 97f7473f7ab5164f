// Package streamjson is the format of `qkit ask --output-format stream-json`: one JSON object per
// line, as things happen. Each event is an agent.Event as it marshals (both backends yield the
// same types); the last line is a Result. Schema is the committed JSON Schema that documents the
// format, and tests validate every line they produce against it.
package streamjson

import (
	_ "embed"
	"encoding/json"
	"io"
	"sync"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/structured"
)

// Schema is the JSON Schema (2020-12) of every line (stream-json.schema.json beside this file).
//
//go:embed stream-json.schema.json
var Schema []byte

// The stop reasons of a Result beyond the agent's own (end_turn, refusal, cancelled, max_tokens,
// max_turn_requests).
const (
	StopTimedOut = "timed_out"
	StopError    = "error"
)

// StopReason is a Result's stop_reason: timed_out for a run that hit its timeout, cancelled for
// one that was interrupted; otherwise the agent's own reason, except that a failed run gets error
// when the agent gave none, or on the chat backend (whose end_turn is only what qkit assumes of a
// text run), or when its turn was cancelled by qkit for the failure; a run with no reason at all
// gets error too.
func StopReason(backend, agentReason string, timedOut, cancelled, failed bool) string {
	switch {
	case timedOut:
		return StopTimedOut
	case cancelled:
		return "cancelled"
	case failed && backend == "chat", agentReason == "":
		return StopError
	case failed && agentReason == "cancelled":
		// Nobody cancelled the run: qkit ended the agent's turn itself, because the run failed
		// (a tool nothing allowed under --on-permission fail): error, as on the chat backend.
		return StopError
	}
	return agentReason
}

// Result is the last line.
type Result struct {
	Type            string        `json:"type"` // always "result"
	Backend         string        `json:"backend"`
	SessionID       string        `json:"session_id,omitempty"`
	StopReason      string        `json:"stop_reason"`
	Output          string        `json:"output"`
	Truncated       bool          `json:"truncated,omitempty"`
	TimedOut        bool          `json:"timed_out,omitempty"`
	IsError         bool          `json:"is_error,omitempty"`
	Error           string        `json:"error,omitempty"`
	ExitCode        int           `json:"exit_code"`
	AgentExitCode   int           `json:"agent_exit_code"`
	DurationMS      int64         `json:"duration_ms"`
	Usage           *agent.Usage  `json:"usage,omitempty"`
	Tools           []ToolSummary `json:"tools"`
	Denied          []string      `json:"denied,omitempty"`
	RefusedPaths    []string      `json:"refused_paths,omitempty"`
	RefusedRequests []string      `json:"refused_requests,omitempty"`
	// StructuredOutput is the answer validated against --schema; Attempts each answer checked.
	StructuredOutput json.RawMessage      `json:"structured_output,omitempty"`
	Attempts         []structured.Attempt `json:"attempts,omitempty"`
}

// ToolSummary is one tool call of the run, as it ended: the fields of `ask --json`'s "tools"
// (name, server, trusted, denied) and what an ACP agent adds (id, title, kind, status).
type ToolSummary struct {
	ID string `json:"id"`
	// Name is the tool's name, or its title when the agent gives no name (ACP agents often don't).
	Name    string `json:"name"`
	Server  string `json:"server"`
	Trusted bool   `json:"trusted"`
	Denied  bool   `json:"denied"`
	Title   string `json:"title,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Status  string `json:"status,omitempty"`
}

// Summaries sums up tool calls for a Result.
func Summaries(tools []agent.ToolCall) []ToolSummary {
	out := make([]ToolSummary, 0, len(tools))
	for _, t := range tools {
		name, server := t.Name, t.Server
		if s, tool, ok := t.MCP(); ok {
			name, server = tool, s // an ACP agent's MCP call names them in its title only
		}
		if name == "" {
			name = t.Title
		}
		out = append(out, ToolSummary{ID: t.ID, Name: name, Server: server, Trusted: t.Trusted, Denied: t.Denied, Title: t.Title, Kind: t.Kind, Status: t.Status})
	}
	return out
}

// Writer writes the lines. It is safe for concurrent use; each line is one Write, made at once.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
	// OnError is told of the first failed write (the reader went away), once.
	OnError func(error)
}

// NewWriter writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Event writes one event line.
func (w *Writer) Event(ev agent.Event) { w.line(ev) }

// Result writes the result line.
func (w *Writer) Result(r Result) error {
	r.Type = "result"
	if r.Tools == nil {
		r.Tools = []ToolSummary{}
	}
	w.line(r)
	return w.Err()
}

// Err is the first failed write.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // agent.Event and Result always marshal
	}
	b = append(output.TerminalSafeJSON(b), '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		if w.OnError != nil {
			w.OnError(err)
		}
	}
}
