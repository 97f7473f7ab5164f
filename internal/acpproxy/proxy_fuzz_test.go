package acpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// qkitCommands stand in for qkit's slash commands.
var qkitCommands = []acp.AvailableCommand{
	{Name: "context show", Description: "Show the context files in use"},
	{Name: "context add", Description: "Add context files"},
}

// testEditor is the editor side: what the proxy sends goes to out.
type testEditor struct {
	out      *lockedBuf
	commands []acp.AvailableCommand
	caps     acp.ClientCapabilities
	conn     EditorConn
}

func (e *testEditor) Send(lines []byte) error {
	_, err := e.out.Write(lines)
	return err
}
func (e *testEditor) Caps() acp.ClientCapabilities     { return e.caps }
func (e *testEditor) Commands() []acp.AvailableCommand { return e.commands }
func (e *testEditor) Conn() EditorConn                 { return e.conn }

// lockedBuf is the editor's side of the pipe: what the proxy wrote, line by line.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) take() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := bytes.Clone(l.b.Bytes())
	l.b.Reset()
	return out
}

// FuzzProxyNotify: whatever notification the agent sends for a session qkit knows, the editor
// gets exactly one JSON-RPC line, with the agent's method, params that are valid JSON, and qkit's
// session id in place of the agent's however the JSON is read (the first "sessionId" key, as the
// proxy reads it, and the last, as JavaScript's JSON.parse does). Notifications for sessions qkit
// does not know send nothing.
func FuzzProxyNotify(f *testing.F) {
	const agentID, qkitID = "agent-7f3c", "0b6f3a52-2f0e-4c7e-9d1a-5c2b8e7f9a10"
	f.Add("session/update", []byte(`{"sessionId":"agent-7f3c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`))
	f.Add("session/update", []byte(`{"sessionId":"agent-7f3c","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compact","description":"Compact the conversation"},{"name":"context show","description":"theirs"}]}}`))
	f.Add("session/update", []byte(`{"update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","status":"pending"},"sessionId" : "agent-7f3c"}`))
	f.Add("_kiro.dev/metadata", []byte(`{"sessionId":"agent-7f3c","contextUsagePercentage":12.5,"credits":0.04}`))
	f.Add("session/update", []byte(`{"sessionId":"agent-7f3c","update":{"sessionId":"agent-7f3c"}}`))
	f.Add("session/update", []byte(`{"sessionId":"agent-7f3c","sessionId":"other"}`))
	f.Add("session/update", []byte(`{"x\"sessionId":"agent-7f3c","sessionId":"agent-7f3c"}`))
	f.Add("session/update", []byte(`{"session\u0049d":"agent-7f3c","update":{}}`))
	f.Add("session/update", []byte(`{"sessionId":"someone-else","update":{}}`))
	f.Add("session/update", []byte(`{"sessionId":"agent-7f3c","SessionID":"x","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}`))
	f.Add("qkit/bare_text", []byte(`"hello"`))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		// What route hands over: a JSON value read from one line of the agent's stdout.
		if !json.Valid(params) || bytes.ContainsAny(params, "\n") {
			return
		}
		out := &lockedBuf{}
		ed := &testEditor{out: out, commands: qkitCommands}
		p := New(context.Background(), Options{Editor: ed, Logger: slog.New(slog.DiscardHandler)})
		s := &Session{id: qkitID, agentID: agentID, ready: true}
		p.register(s)

		p.notify(method, params)
		got := out.take()
		if sessionIDOf(params) != agentID {
			if len(got) != 0 {
				t.Fatalf("a notification for another session reached the editor: %s", got)
			}
			return
		}
		if bytes.Count(got, []byte("\n")) != 1 || got[len(got)-1] != '\n' {
			t.Fatalf("not one line: %q", got)
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  *string         `json:"method"`
			Params  json.RawMessage `json:"params"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(got, &msg); err != nil {
			t.Fatalf("not JSON: %v: %s", err, got)
		}
		if msg.JSONRPC != "2.0" || msg.Method == nil || msg.ID != nil || !json.Valid(msg.Params) {
			t.Fatalf("not a JSON-RPC notification: %s", got)
		}
		if utf8.ValidString(method) && *msg.Method != method {
			t.Fatalf("method %q became %q", method, *msg.Method)
		}
		if id := sessionIDOf(msg.Params); id != qkitID {
			t.Fatalf("the editor reads session %q (first key) in %s", id, msg.Params)
		}
		var last map[string]json.RawMessage // exact keys, the last one wins
		if err := json.Unmarshal(msg.Params, &last); err != nil || string(last["sessionId"]) != `"`+qkitID+`"` {
			t.Fatalf("the editor reads session %s (last key, %v) in %s", last["sessionId"], err, msg.Params)
		}
		var in acp.SessionNotification
		if method == acp.ClientMethodSessionUpdate && bytes.Contains(params, []byte(`"available_commands_update"`)) &&
			json.Unmarshal(params, &in) == nil && in.Update.AvailableCommandsUpdate != nil {
			var n acp.SessionNotification
			if err := json.Unmarshal(msg.Params, &n); err != nil || n.Update.AvailableCommandsUpdate == nil {
				t.Fatalf("the agent's commands update became %s (%v)", msg.Params, err)
			} else {
				// qkit's commands come first, whatever the agent offered, and no name twice.
				cmds := n.Update.AvailableCommandsUpdate.AvailableCommands
				own := qkitCommands
				if len(cmds) < len(own) {
					t.Fatalf("merged commands %+v lack qkit's %+v", cmds, own)
				}
				for i, c := range own {
					if cmds[i].Name != c.Name {
						t.Fatalf("merged commands %+v do not start with qkit's %+v", cmds, own)
					}
				}
				for _, c := range cmds[len(own):] {
					for _, o := range own {
						if c.Name == o.Name {
							t.Fatalf("the agent's %q shadows qkit's: %+v", c.Name, cmds)
						}
					}
				}
			}
		}
	})
}

// FuzzShown: whatever session/update the agent sends, what goes to the editor is valid JSON when
// the agent's was, a tool call's title in it shows as written (termtext.VisibleLine changes
// nothing), and a reply or thought chunk's text holds nothing the filter removes.
func FuzzShown(f *testing.F) {
	f.Add([]byte(`{"sessionId":"a","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"echo \u001b[2J\u202ehi"}}`), false)
	f.Add([]byte(`{"sessionId":"a","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"A\u001b[31mB\r\u0000"}}}`), false)
	f.Add([]byte(`{"sessionId":"a","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"\u009b31mx"}}}`), true)
	f.Add([]byte(`{"sessionId":"a","update":{"sessionUpdate":"tool_call_update","title":"\u202e","Title":"ok"}}`), false)
	f.Add([]byte(`{"sessionId":"a","update":{"sessionUpdate":"tool_c\u0061ll","t\u0069tle":"\u001b[2J"}}`), false)
	f.Fuzz(func(t *testing.T, params []byte, raw bool) {
		s := &Session{}
		out, pass := s.shown(params, raw)
		if !pass || !json.Valid(params) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("shown(%q) = %q, not JSON", params, out)
		}
		update := object(object(out)["update"])
		kind, _ := jsonString(update["sessionUpdate"])
		switch kind {
		case "tool_call", "tool_call_update":
			if title, ok := jsonString(update["title"]); ok && termtext.VisibleLine(title) != title {
				t.Fatalf("shown(%q): title %q goes out unescaped", params, title)
			}
		case "agent_message_chunk", "agent_thought_chunk":
			content := object(update["content"])
			typ, _ := jsonString(content["type"])
			if text, ok := jsonString(content["text"]); !raw && typ == "text" && ok && termtext.StripString(text) != text {
				t.Fatalf("shown(%q): text %q goes out unfiltered", params, text)
			}
		}
	})
}
