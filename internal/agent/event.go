package agent

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// EventType says what an Event reports. Both backends (the text runner that scrapes
// `chat --no-interactive`, and the ACP client of `<agent> acp`) yield the same types, so every
// front end (ask's stream-json, ACP sessions, MCP progress) is written once over events. The
// values are the "type" field of `qkit ask --output-format stream-json`; they are a documented
// format, so a value is never renamed.
type EventType string

// The event types. The text backend can only know some of them (message chunks, tool calls from
// the agent's banners, denials); the ACP backend yields them all.
const (
	// EventMessage is a chunk of the agent's reply (Text). Concatenated, the chunks are the reply.
	EventMessage EventType = "message"
	// EventThought is a chunk of the agent's reasoning (Text); it is not part of the reply.
	EventThought EventType = "thought"
	// EventToolCall is a tool call the agent started (Tool, with Status pending or in_progress).
	EventToolCall EventType = "tool_call"
	// EventToolCallUpdate changes a tool call started earlier (Tool, same ID); only the fields
	// that changed need to be set, and Status ends as completed or failed.
	EventToolCallUpdate EventType = "tool_call_update"
	// EventPlan replaces the agent's whole plan (Plan).
	EventPlan EventType = "plan"
	// EventPermissionRequested is the agent asking to run a tool (Permission, without Decision).
	EventPermissionRequested EventType = "permission_requested"
	// EventPermissionDecided is the answer given to a permission request (Permission, with
	// Decision and DecidedBy).
	EventPermissionDecided EventType = "permission_decided"
	// EventUsage reports what the turn used so far (Usage).
	EventUsage EventType = "usage"
)

// Event is one thing that happened during a run. Type says which of the other fields is set.
type Event struct {
	Type       EventType   `json:"type"`
	Text       string      `json:"text,omitempty"`
	Tool       *ToolCall   `json:"tool,omitempty"`
	Plan       []PlanEntry `json:"plan,omitempty"`
	Permission *Permission `json:"permission,omitempty"`
	Usage      *Usage      `json:"usage,omitempty"`
}

// Tool call statuses, as ACP names them.
const (
	ToolPending    = "pending"
	ToolInProgress = "in_progress"
	ToolCompleted  = "completed"
	ToolFailed     = "failed"
)

// ToolCall is a tool the agent runs, as far as the backend can tell.
type ToolCall struct {
	// ID identifies the call within the run (ACP's toolCallId; the text backend numbers them).
	ID string `json:"id"`
	// Title is what a person reads ("Running: ls", or the tool's name when nothing better is known).
	Title string `json:"title,omitempty"`
	// Name is the tool's name as the agent knows it (execute_bash, shell, fs_read, or the MCP
	// tool's own name); empty when the backend cannot tell.
	Name string `json:"name,omitempty"`
	// Server is the MCP server the tool comes from; empty for the agent's built-in tools. The
	// agent trusts such a tool as "@server/name" (TrustName).
	Server string `json:"server,omitempty"`
	// AgentName is the name the agent trusts the tool under (TrustName's form) as the agent
	// printed it, set only when that differs from what Name and Server show: the agent's name
	// carried characters a terminal acts on (an escape sequence, a control character), which the
	// shown name leaves out. Such a tool is not the one the shown name trusts, and --trust-tools
	// cannot carry its real name (Trustable).
	AgentName string `json:"-"`
	// Kind is ACP's tool kind: read, edit, delete, move, search, execute, think, fetch, other.
	Kind string `json:"kind,omitempty"`
	// Status is pending, in_progress, completed or failed.
	Status string `json:"status,omitempty"`
	// Trusted is set when the agent ran the tool without asking (it was trusted).
	Trusted bool `json:"trusted,omitempty"`
	// Denied is set when the tool was refused (by the agent's policy or by a person).
	Denied bool `json:"denied,omitempty"`
	// Locations are the files the call touches.
	Locations []Location `json:"locations,omitempty"`
	// Diffs are the changes an edit makes.
	Diffs []Diff `json:"diffs,omitempty"`
	// Input is the tool's raw input, when the agent reports it.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the tool's text output, when the agent reports it.
	Output string `json:"output,omitempty"`
}

// TrustName is the name under which the agent trusts this tool in --trust-tools: "@server/name"
// for an MCP tool (a bare name leaves an MCP tool untrusted; see MCP), the name itself otherwise.
func (t ToolCall) TrustName() string {
	if server, tool, ok := t.MCP(); ok {
		return "@" + server + "/" + tool
	}
	return t.Name
}

// AgentTrustName is the name the agent itself trusts this tool by: TrustName as the agent printed
// it (AgentName), which may hold what a terminal acts on. Match and trust by it; never show it.
func (t ToolCall) AgentTrustName() string {
	if t.AgentName != "" {
		return t.AgentName
	}
	return t.TrustName()
}

// Trustable reports whether --trust-tools can name this tool: the agent named it, and its name
// as the agent has it is a plain tool name (PlainToolName). A tool whose shown name differs from
// the agent's is not: trusting the shown name would trust another tool, or none.
func (t ToolCall) Trustable() bool {
	return PlainToolName(t.AgentTrustName())
}

// PlainToolName reports whether n can be passed in the agent's --trust-tools=a,b list as it is:
// not empty, no comma (the list's separator), no white space, and nothing a terminal acts on
// (escape sequences, control characters, bidirectional controls) or that is not UTF-8.
func PlainToolName(n string) bool {
	if n == "" || !utf8.ValidString(n) || termtext.StripString(n) != n {
		return false
	}
	return !strings.ContainsFunc(n, func(r rune) bool { return r == ',' || unicode.IsSpace(r) || !unicode.IsPrint(r) })
}

// kiroMCPTitle is how kiro-cli's ACP agent titles an MCP tool call, with kind other: ACP carries
// no tool name, so the title is where the server and the tool are read from.
var kiroMCPTitle = lazyRegexp(`^Running: @([^\s/@]+)/(\S+)$`)

// MCP returns the MCP server and tool of t: Server and Name when the backend knows them (the
// text backend's banners), else what kiro's ACP title "Running: @server/tool" says for a call of
// kind other, or of no kind yet (a permission request carries a title only). ok is false for any
// other tool, such as a shell command that happens to read "@a/b".
func (t ToolCall) MCP() (server, tool string, ok bool) {
	if t.Server != "" {
		return t.Server, t.Name, true
	}
	if t.Name != "" || t.Kind != "" && t.Kind != "other" {
		return "", "", false
	}
	if m := kiroMCPTitle().FindStringSubmatch(t.Title); m != nil {
		return m[1], m[2], true
	}
	return "", "", false
}

// Merge lays what an update says of a call over what was known of it: the fields the update sets
// replace the old ones, and Trusted and Denied, once set, stay set. A zero t (nothing known yet)
// gives upd.
func (t ToolCall) Merge(upd ToolCall) ToolCall {
	if t.ID == "" {
		return upd
	}
	if upd.Title != "" {
		t.Title = upd.Title
	}
	if upd.Name != "" {
		t.Name = upd.Name
	}
	if upd.Server != "" {
		t.Server = upd.Server
	}
	if upd.Kind != "" {
		t.Kind = upd.Kind
	}
	if upd.Status != "" {
		t.Status = upd.Status
	}
	if len(upd.Locations) > 0 {
		t.Locations = upd.Locations
	}
	if len(upd.Diffs) > 0 {
		t.Diffs = upd.Diffs
	}
	if len(upd.Input) > 0 {
		t.Input = upd.Input
	}
	if upd.Output != "" {
		t.Output = upd.Output
	}
	t.Denied = t.Denied || upd.Denied
	t.Trusted = t.Trusted || upd.Trusted
	return t
}

// Location is a file (and optionally a line) a tool call touches.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Diff is a change to one file; OldText is nil for a new file.
type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// PlanEntry is one step of the agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// Permission is the agent asking to run a tool, and, once decided, the answer.
type Permission struct {
	// Tool is the call the agent wants to make (ID, Title and whatever else it said).
	Tool ToolCall `json:"tool"`
	// Options are the answers the agent offers.
	Options []PermissionOption `json:"options,omitempty"`
	// Decision is the chosen option's kind (allow_once, allow_always, reject_once,
	// reject_always) or "cancelled"; empty while undecided.
	Decision string `json:"decision,omitempty"`
	// DecidedBy says who decided: "policy" (--yolo, --trust-tools, --deny-tools,
	// --on-permission), "person" (a questions client or the terminal), "client" (an editor).
	DecidedBy string `json:"decided_by,omitempty"`
}

// PermissionOption is one answer the agent offers to a permission request.
type PermissionOption struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Kind is allow_once, allow_always, reject_once or reject_always.
	Kind string `json:"kind"`
}

// Usage is what a turn used, as far as the agent reports it (kiro's _kiro.dev/metadata: credits,
// context used, turn duration).
type Usage struct {
	Credits        float64 `json:"credits,omitempty"`
	ContextPercent float64 `json:"context_percent,omitempty"`
	TurnDurationMs int64   `json:"turn_duration_ms,omitempty"`
	InputTokens    int64   `json:"input_tokens,omitempty"`
	OutputTokens   int64   `json:"output_tokens,omitempty"`
}

// Add counts v, a later report of the same run or turn, into u: credits and tokens add up; the
// context used and the turn's duration are the latest reported.
func (u *Usage) Add(v Usage) {
	u.Credits += v.Credits
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	if v.ContextPercent > 0 {
		u.ContextPercent = v.ContextPercent
	}
	if v.TurnDurationMs > 0 {
		u.TurnDurationMs = v.TurnDurationMs
	}
}

// ToolLog keeps a run's tool calls from its events: in the order they started, each as its
// updates left it, denied when its permission was refused. The zero ToolLog is empty.
type ToolLog struct {
	Calls []ToolCall
	index map[string]int // Calls' positions by id
}

// Record takes in ev when it is about a tool call; other events are ignored.
func (l *ToolLog) Record(ev Event) {
	switch ev.Type {
	case EventToolCall, EventToolCallUpdate:
		if i, ok := l.index[ev.Tool.ID]; ok {
			l.Calls[i] = l.Calls[i].Merge(*ev.Tool)
			return
		}
		if l.index == nil {
			l.index = map[string]int{}
		}
		l.index[ev.Tool.ID] = len(l.Calls)
		l.Calls = append(l.Calls, *ev.Tool)
	case EventPermissionDecided:
		if i, ok := l.index[ev.Permission.Tool.ID]; ok && ev.Permission.Tool.Denied {
			l.Calls[i].Denied = true
		}
	}
}

// ToolUse is one tool a run used, as `ask --json` reports it in "tools".
type ToolUse struct {
	Name    string `json:"name"`
	Server  string `json:"server"`
	Trusted bool   `json:"trusted"`
	Denied  bool   `json:"denied"`
}
