// Package sessionrec holds the records of qkit's session store (internal/sessions) without the
// store: a session, its transcript's messages, one front end's exchange to record, and the spool a
// process that does not open the store (the light qkit binary, which links no SQLite) leaves its
// exchanges in for the store to take in when it next opens.
package sessionrec

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrSessionNotFound is returned for a session id the database does not hold.
var ErrSessionNotFound = errors.New("session not found")

// ErrAmbiguous is returned for an id prefix that more than one session starts with.
var ErrAmbiguous = errors.New("ambiguous session id")

// ErrFolderGone is returned for a session whose folder no longer exists.
var ErrFolderGone = errors.New("folder no longer exists")

// Role says who wrote a transcript message.
type Role string

// The roles of a transcript.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// Message is one entry of a session's transcript.
type Message struct {
	Role Role
	// Text is what q was given (a prompt, with its resources converted to text) or what it said.
	Text string
	// Blocks are a prompt's content blocks as the client sent them, a JSON array, so session/load
	// replays them as they were; nil for replies and for prompts stored before migration 2.
	Blocks json.RawMessage
	// Tools are the tool calls of a reply, when the front end reported them (ask, the MCP tool).
	Tools []ToolCall
	// Usage is what a reply cost, when the agent said.
	Usage *Usage
	// Ended is how a reply's turn ended (Ending: end_turn, timed_out, cancelled, error, or the
	// agent's own stop reason); "" for prompts, and for replies stored before migration 6.
	Ended string
	// Truncated: qkit cut the reply (its size cap); Text is what it kept.
	Truncated bool
	// At is when the message was stored.
	At time.Time
}

// ToolCall is one tool call of a reply and how it ended.
type ToolCall struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	Title  string `json:"title,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// Status is how the call ended: completed, failed, or empty when the front end does not know.
	Status string `json:"status,omitempty"`
	Denied bool   `json:"denied,omitempty"`
}

// Usage is what one reply cost, as far as the agent tells (kiro: credits and a share of the
// context window; no tokens).
type Usage struct {
	Credits        float64 `json:"credits,omitempty"`
	ContextPercent float64 `json:"context_percent,omitempty"`
	TurnDurationMs int64   `json:"turn_duration_ms,omitempty"`
	InputTokens    int64   `json:"input_tokens,omitempty"`
	OutputTokens   int64   `json:"output_tokens,omitempty"`
}

// Turn is one prompt and its reply, as AppendTurn stores them. Every door fills it by one rule
// (ending.go): Reply is the agent's own text, without qkit's notices; Ended and Truncated say how
// the turn ended.
type Turn struct {
	Prompt    string
	Blocks    json.RawMessage // the prompt's content blocks (a JSON array); nil: Prompt alone
	Reply     string
	Tools     []ToolCall // the reply's tool calls, when known
	Usage     *Usage     // the reply's usage, when known
	Ended     string     // how the turn ended (Ending)
	Truncated bool       // qkit cut the reply at its size cap
}

// SessionRecord is a session as the database keeps it.
type SessionRecord struct {
	ID  string
	Cwd string
	// MCPServers is the client's list from session/new, as JSON (stored, see the README).
	MCPServers   json.RawMessage
	Model        string
	TrustedTools []string
	Title        string
	// Backend is how the session's prompts reach the agent: "" or BackendText (the agent CLI's
	// chat, the transcript pasted in), or BackendACP (a session of `<agent> acp`, AgentSession).
	Backend string
	// AgentSession is the agent's own id of the session (ACP backend).
	AgentSession string
	// Origin is the front end that started the session (OriginACPServe, OriginAsk, ...).
	Origin string
	// Mode is the agent mode the session runs in (kiro's agent), when one was chosen.
	Mode      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// The front ends a session can come from (SessionRecord.Origin).
const (
	OriginACPServe = "acp-serve"
	OriginAsk      = "ask"
	OriginMCP      = "mcp"
	OriginImport   = "import"
)

// The backends a session can have.
const (
	BackendText = "text"
	BackendACP  = "acp"
)

// Exchange is one prompt and its reply run by a front end other than acp serve (ask on the ACP
// backend, the q-developer-agent MCP tool), for Record.
type Exchange struct {
	// ID is the session to append to. Empty: the session whose agent session is AgentSession, else
	// (Continue) the latest session of Origin in Cwd, else a new session (named AgentSession when
	// there is one, so `ask --session` finds it under the id ask printed).
	ID           string
	AgentSession string
	Continue     bool
	Origin       string
	Cwd          string
	Backend      string
	Model        string
	TrustedTools []string
	Turn         Turn
}

// Continuation is what a front end needs to go on with a stored session: the session, the agent's
// own session to load (empty: open a new one), and, when there is none, the transcript to put
// before the next prompt.
type Continuation struct {
	Session      SessionRecord
	AgentSession string
	History      []Message
}
