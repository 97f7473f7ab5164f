package acpclient

import (
	"context"
	"slices"
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// Access is a request of the agent's that changes the machine rather than reads it: a file write
// (fs/write_text_file) or a command (terminal/create). An agent is expected to ask permission
// (session/request_permission) for the tool call such a request belongs to; one that does not
// is not served on that account: Options.Access decides.
type Access struct {
	SessionID string
	// Method is the ACP method: fs/write_text_file or terminal/create.
	Method string
	// Tool is the request as a policy reads a tool call: kind edit for a write, execute for a
	// command, titled "Write PATH" or "Run COMMAND".
	Tool agent.ToolCall
	// Path is the file a write writes.
	Path string
	// Command is the command line a terminal runs (the command, then its arguments).
	Command []string
	// ToolCallID is the tool call the request names in its _meta ("toolCallId"), if it does: ACP's
	// schema has no such field, and kiro's V3 engine is not known to send one.
	ToolCallID string
	// Granted is the tool call of this turn whose permission was granted and that covers the
	// request (see GrantedKinds), or nil. When the request names its tool call (ToolCallID), only
	// that call's permission counts.
	Granted *agent.ToolCall
}

// AccessFunc decides an Access: nil serves it; an error refuses it, and the agent gets the
// error's message (as the details of a -32602 answer, the shape every refusal of this package
// has). The turn goes on: the agent decides what to do without it, and the caller what a refusal
// means for the run.
type AccessFunc func(ctx context.Context, req Access) error

// GrantedKinds are the ACP tool kinds whose granted permission covers a request of method: a
// write belongs to an edit, delete or move; a command to an execute. A permission granted for a
// read, a search or an MCP tool covers neither.
func GrantedKinds(method string) []string {
	if method == acp.ClientMethodTerminalCreate {
		return []string{"execute"}
	}
	return []string{"edit", "delete", "move"}
}

// String names the request for a person and for a result: "write PATH" or "run COMMAND", each
// part Go-quoted when it holds anything but plain characters (so it is safe on a terminal).
func (a Access) String() string {
	if a.Method == acp.ClientMethodTerminalCreate {
		words := make([]string, len(a.Command))
		for i, w := range a.Command {
			words[i] = quoteWord(w)
		}
		return "run " + strings.Join(words, " ")
	}
	return "write " + quoteWord(a.Path)
}

// quoteWord is w as it is when it holds only characters a shell and a terminal take as they are,
// else Go-quoted.
func quoteWord(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%~", r))
	}) {
		return w
	}
	return strconv.Quote(w)
}

// grant records that the person or the policy allowed tool call id (of the given kind, as the
// permission request said) in sessionID. Prompt forgets a session's grants when its turn starts
// and ends; a session with no turn of its own (kiro's subagents run under theirs) keeps them
// while the connection lives, still each for its own tool call while it runs.
func (c *Conn) grant(sessionID, id, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grants[sessionID] = append(c.grants[sessionID], grantedCall{id: id, kind: kind})
}

// grantedCall is a tool call of the turn whose permission was granted.
type grantedCall struct{ id, kind string }

// granted is the tool call of sessionID that covers a request of method: its permission was
// granted in this turn (see grant), it has not ended (completed or failed), its kind is one of
// GrantedKinds(method), and it is the call named id when id is not empty. The latest grant wins.
func (c *Conn) granted(sessionID, method, id string) *agent.ToolCall {
	kinds := GrantedKinds(method)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range slices.Backward(c.grants[sessionID]) {
		if id != "" && g.id != id {
			continue
		}
		tc := c.tools[g.id]
		if tc.ID == "" {
			tc.ID = g.id
		}
		if g.kind != "" {
			tc.Kind = g.kind
		}
		if tc.Status == "completed" || tc.Status == "failed" || !slices.Contains(kinds, tc.Kind) {
			continue
		}
		return &tc
	}
	return nil
}

// metaToolCall is the toolCallId a request carries in its _meta, if any.
func metaToolCall(meta map[string]any) string {
	id, _ := meta["toolCallId"].(string)
	return id
}

// allowed asks Options.Access about a write or a command before it is served; nil means it may
// be served, otherwise the error is the agent's answer.
func (cl *client) allowed(ctx context.Context, a Access) error {
	c := cl.c
	if c.o.Access == nil {
		return nil
	}
	a.Granted = c.granted(a.SessionID, a.Method, a.ToolCallID)
	err := c.o.Access(ctx, a)
	if err == nil {
		return nil
	}
	c.log.Info("refused an agent request", "session", a.SessionID, "request", a.String(), "error", err)
	return refusal(err)
}

// writeAccess and terminalAccess describe the requests Options.Access decides.
func writeAccess(req acp.WriteTextFileRequest) Access {
	id := metaToolCall(req.Meta)
	return Access{SessionID: string(req.SessionId), Method: acp.ClientMethodFsWriteTextFile, Path: req.Path, ToolCallID: id,
		Tool: agent.ToolCall{ID: id, Kind: "edit", Title: "Write " + req.Path, Locations: []agent.Location{{Path: req.Path}}}}
}

func terminalAccess(req acp.CreateTerminalRequest) Access {
	id := metaToolCall(req.Meta)
	command := append([]string{req.Command}, req.Args...)
	return Access{SessionID: string(req.SessionId), Method: acp.ClientMethodTerminalCreate, Command: command, ToolCallID: id,
		Tool: agent.ToolCall{ID: id, Kind: "execute", Title: "Run " + strings.Join(command, " ")}}
}
