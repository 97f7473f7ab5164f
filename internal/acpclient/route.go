package acpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine is the longest line the agent may send (the SDK's own limit).
const MaxLine = 10 << 20

// MalformedError is the agent writing something on stdout that is not a JSON-RPC message.
type MalformedError struct {
	// Line is the start of the offending line.
	Line string
	Err  error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("the agent wrote something that is not JSON-RPC on stdout (%v): %q", e.Err, e.Line)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// envelope is what route reads of every line to know where it goes.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Type and Content are kiro 1.26.2's bare {"content":…,"type":"text"} lines, sent instead of
	// agent_message_chunk updates.
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// route reads the agent's stdout line by line. Requests and responses (and $/cancel_request) are
// written to sdk, for the SDK's connection; notifications are given to notify, in order, before the
// next line is read, so a slow notify slows the agent down instead of queueing without bound. It
// returns nil at the end of r, or the reason it stopped: a line that is not JSON-RPC, a line over
// MaxLine, or sdk closed.
func route(r io.Reader, sdk io.Writer, notify func(method string, params json.RawMessage)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var env envelope
		if err := json.Unmarshal(line, &env); err != nil {
			return &MalformedError{Line: snippet(line), Err: err}
		}
		switch {
		case len(env.ID) > 0 || env.Method == "$/cancel_request":
			if _, err := sdk.Write(append(line, '\n')); err != nil {
				return err
			}
		case env.Method != "":
			notify(env.Method, env.Params)
		case env.Type == "text" && len(env.Content) > 0 && env.Content[0] == '"':
			notify(bareText, env.Content)
		default:
			return &MalformedError{Line: snippet(line), Err: errors.New("neither a request, a response nor a notification")}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("the agent sent a line longer than %d MiB", MaxLine>>20)
		}
		return fmt.Errorf("reading the agent's stdout: %w", err)
	}
	return nil
}

// bareText is the method notify gets for a bare text line; its params are the JSON string.
const bareText = "qkit/bare_text"

func snippet(line []byte) string {
	const max = 200
	if len(line) > max {
		return string(line[:max]) + "…"
	}
	return string(line)
}
