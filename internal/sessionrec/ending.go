package sessionrec

import (
	"strings"

	"github.com/qkit-cli/qkit/internal/streamjson"
)

// What a stored reply keeps, on every door (`qkit ask`, the q-developer-agent tool, acp serve's
// text path and its proxy): Turn.Reply is the agent's own text, as the runner kept it (cut at the
// size cap), and never qkit's notices (truncation, timeout, a refused permission, a failure),
// which a front end shows its reader and nothing more. How the turn ended is data beside it:
// Turn.Ended and Turn.Truncated, from Ending. History (WithHistory) and `sessions show`/export
// (internal/sessions) say it through EndingNote, so a session continued at another door gives
// the model the same words whichever door a turn came through.

// The endings a turn can have (Turn.Ended) are the stop reasons of `qkit ask`'s result
// (streamjson.StopReason): these, and the agent's own others (refusal, max_tokens,
// max_turn_requests). "" is a turn stored before qkit kept its ending.
const (
	EndedTurn      = "end_turn"
	EndedTimedOut  = streamjson.StopTimedOut
	EndedCancelled = "cancelled"
	EndedError     = streamjson.StopError
	EndedRefusal   = "refusal"
)

// Ending is how a turn ended as the transcript keeps it (Turn.Ended), from what the door knows of
// it: the backend (chat, acp), the agent's own stop reason (end_turn on chat when the run
// finished; "" when there was none), whether the run hit its timeout, whether the caller cancelled
// it, whether it failed. It is the stop reason `qkit ask` reports for the same run, but that a
// stop reason of a form no agent uses (ValidEnding) is kept as error: it is printed later.
func Ending(backend, agentReason string, timedOut, cancelled, failed bool) string {
	if !ValidEnding(agentReason) {
		agentReason, failed = "", true
	}
	return streamjson.StopReason(backend, agentReason, timedOut, cancelled, failed)
}

// ValidEnding reports whether s has the form of a stored ending: empty, or a stop reason's form
// (lower-case letters and underscores, at most 64 bytes). An imported file's are checked with it.
func ValidEnding(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// EndingNote is what a stored reply's ending says after its text, to the model (the history put
// before a prompt) and to a person (`sessions show`, the Markdown export): "" for a reply that
// ended as it should, whole; otherwise one bracketed line. ended and truncated are the message's;
// tools its tool calls (a refused one is named). The ending came from the agent (its own stop
// reason) or from an imported file: the caller filters it for a terminal as it filters the text.
func EndingNote(ended string, truncated bool, tools []ToolCall) string {
	var parts []string
	if truncated {
		parts = append(parts, "the reply was cut at a size limit of qkit's; the rest is not kept here")
	}
	denied := deniedTools(tools)
	switch ended {
	case "", EndedTurn:
	case EndedTimedOut:
		parts = append(parts, "the turn hit qkit's timeout (agent.timeout) and the agent was stopped: the reply is partial")
	case EndedCancelled:
		parts = append(parts, "the turn was cancelled and the agent was stopped: the reply is partial")
	case EndedError, EndedRefusal:
		switch {
		case denied != "":
			parts = append(parts, "the turn ended when permission to use "+denied+" was refused: the task is not done")
		case ended == EndedRefusal:
			parts = append(parts, "the agent refused to go on (stop reason refusal)")
		default:
			parts = append(parts, "the run failed: the reply may be partial")
		}
	default:
		parts = append(parts, "the agent stopped the turn with stop reason "+ended)
	}
	if len(parts) == 0 {
		return ""
	}
	return "[qkit: " + strings.Join(parts, "; ") + "]"
}

// ReplyText is a stored reply as it is put back in front of the model or an editor (the history
// before a prompt, acp serve's session/load): its text, then its EndingNote on a line of its own.
func ReplyText(m Message) string {
	note := EndingNote(m.Ended, m.Truncated, m.Tools)
	if note == "" {
		return m.Text
	}
	if m.Text == "" {
		return note + "\n"
	}
	return strings.TrimRight(m.Text, "\n") + "\n" + note + "\n"
}

// deniedTools names a reply's refused tool calls.
func deniedTools(tools []ToolCall) string {
	var names []string
	for _, t := range tools {
		if name := t.Label(); t.Denied && name != "" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// Label is how the transcript names the call: its name (its title when the agent gave none),
// after its MCP server as @server/name.
func (t ToolCall) Label() string {
	name := t.Name
	if name == "" {
		name = t.Title
	}
	if t.Server != "" {
		name = "@" + t.Server + "/" + name
	}
	return name
}
