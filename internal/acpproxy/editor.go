// Package acpproxy is `acp serve`'s proxy path: the editor's ACP sessions map onto sessions of an
// ACP agent (kiro-cli acp, or any agent given as a command line), whose updates and requests pass
// through to the editor under qkit's session ids. The ACP server (internal/acpserver) keeps the
// editor protocol, the session table and the text path; it reaches the proxy through Proxy's
// methods, and the proxy reaches the editor through the small Editor interface.
package acpproxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// Editor is what the proxy needs of the editor side of `acp serve`.
type Editor interface {
	// Send writes notification lines (each ending in a newline) to the editor. It fails once the
	// connection has ended.
	Send(lines []byte) error
	// Caps are the capabilities the editor gave in initialize.
	Caps() acp.ClientCapabilities
	// Commands are qkit's own slash commands, which come first in a session's commands and which
	// qkit answers; nil when qkit offers none.
	Commands() []acp.AvailableCommand
	// Conn is the editor's connection, for the agent's requests that go to the editor.
	Conn() EditorConn
}

// EditorConn is the part of acp-go-sdk's agent-side connection the proxy calls: the agent's
// requests that the editor answers.
type EditorConn interface {
	RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
	ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error)
	CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error)
	CallExtension(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// Options configure the proxy. They are read-only once New returns.
type Options struct {
	Editor Editor
	Store  *sessions.Store
	// Limits.Command is the agent (agent.Describe); Limits.Grace its stop.
	Limits agent.Limits
	// Agent is `acp serve --agent`: the agent profile (kiro's --agent), or the mode of another
	// ACP agent's sessions.
	Agent string
	// MaxTokens is the context budget (context.max_tokens): context files plus the history a new
	// agent session is given.
	MaxTokens int
	// Context builds the context block for a session's first prompt (cwd, budget, prompt); nil
	// sends none.
	Context func(cwd string, maxTokens int, prompt string) (string, []string, error)
	// BlockText is an embedded text resource as text, for an agent without embeddedContext (the
	// form the text path gives it).
	BlockText func(acp.ContentBlock) (string, error)
	Logger    *slog.Logger
	Now       func() time.Time
}
