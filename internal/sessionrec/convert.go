package sessionrec

import (
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/streamjson"
)

// ToolCallsOf converts a run's tool calls, as they ended, for the transcript.
func ToolCallsOf(tools []agent.ToolCall) []ToolCall {
	var out []ToolCall
	for _, t := range streamjson.Summaries(tools) {
		out = append(out, ToolCall{Name: t.Name, Server: t.Server, Title: t.Title, Kind: t.Kind, Status: t.Status, Denied: t.Denied})
	}
	return out
}

// UsageOf converts the agent's usage for the transcript; nil when the agent reported none.
func UsageOf(u agent.Usage) *Usage {
	if u == (agent.Usage{}) {
		return nil
	}
	return &Usage{Credits: u.Credits, ContextPercent: u.ContextPercent, TurnDurationMs: u.TurnDurationMs, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
}
