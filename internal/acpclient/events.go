package acpclient

import (
	"encoding/json"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// KiroMetadata is kiro's notification of what a turn used (credits, context, duration).
const KiroMetadata = "_kiro.dev/metadata"

// updateKinds are the session/update kinds the SDK decodes. Another kind (kiro 2.19's
// stream_stall_notice, or one from a newer schema) is passed to OnNotification only: the SDK's
// decoder would guess it into the wrong variant.
var updateKinds = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true,
	"tool_call": true, "tool_call_update": true, "plan": true, "available_commands_update": true,
	"current_mode_update": true, "config_option_update": true, "session_info_update": true,
	"usage_update": true,
}

// notify handles one notification from the agent, on the reader's goroutine.
func (c *Conn) notify(method string, params json.RawMessage) {
	if c.o.OnNotification != nil && method != bareText {
		c.o.OnNotification(method, params)
	}
	switch method {
	case "session/update":
		if c.textChunk(params) {
			return
		}
		id, u, ok := decodeUpdate(params)
		if !ok {
			c.log.Debug("session/update skipped: unknown kind or invalid", "params", snippet(params))
			return
		}
		c.update(id, u)
	case bareText:
		var text string
		if json.Unmarshal(params, &text) == nil {
			c.emit("", agent.Event{Type: agent.EventMessage, Text: text})
		}
	case KiroMetadata:
		// A report that says nothing qkit keeps (kiro's first one, for a session that has used
		// none of its context yet) is no usage event: it would read as {}.
		if sid, u, ok := ParseKiroMetadata(params); ok && u != (agent.Usage{}) {
			c.emit(sid, agent.Event{Type: agent.EventUsage, Usage: &u})
		}
	default:
		c.log.Debug("agent notification", "method", method)
	}
}

// textChunk delivers a text message or thought chunk, the bulk of every turn, with one decode;
// false leaves anything else to decodeUpdate.
func (c *Conn) textChunk(params json.RawMessage) bool {
	var n struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			Kind    string `json:"sessionUpdate"`
			Content struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &n) != nil || n.Update.Content.Type != "text" || n.Update.Content.Text == nil {
		return false
	}
	switch n.Update.Kind {
	case "agent_message_chunk":
		c.emit(n.SessionID, agent.Event{Type: agent.EventMessage, Text: *n.Update.Content.Text})
	case "agent_thought_chunk":
		c.emit(n.SessionID, agent.Event{Type: agent.EventThought, Text: *n.Update.Content.Text})
	default:
		return false
	}
	return true
}

// decodeUpdate decodes a session/update's params, when its kind is one the SDK knows.
func decodeUpdate(params json.RawMessage) (string, acp.SessionUpdate, bool) {
	var n struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	var u acp.SessionUpdate
	if json.Unmarshal(params, &n) != nil {
		return "", u, false
	}
	var kind struct {
		Kind string `json:"sessionUpdate"`
	}
	if json.Unmarshal(n.Update, &kind) != nil || !updateKinds[kind.Kind] {
		return "", u, false
	}
	if json.Unmarshal(n.Update, &u) != nil || u.Validate() != nil {
		return "", u, false
	}
	return n.SessionID, u, true
}

// update turns one decoded update into events. Tool call updates carry what is known of the call
// so far (title, kind, locations…), not only what changed.
func (c *Conn) update(sessionID string, u acp.SessionUpdate) {
	ev, ok := Event(u)
	if !ok {
		return
	}
	if ev.Tool != nil {
		c.mu.Lock()
		merged := c.tools[ev.Tool.ID].Merge(*ev.Tool)
		c.tools[ev.Tool.ID] = merged
		c.mu.Unlock()
		ev.Tool = &merged
	}
	c.emit(sessionID, ev)
}

func (c *Conn) emit(sessionID string, ev agent.Event) {
	if c.o.OnEvent != nil {
		c.emitMu.Lock()
		defer c.emitMu.Unlock()
		c.o.OnEvent(sessionID, ev)
	}
}

// Event converts one session update into an event; ok is false for updates no event type covers
// (user message chunks, available commands, modes, config options, session info) and for a
// usage_update that reports nothing qkit keeps.
func Event(u acp.SessionUpdate) (agent.Event, bool) {
	switch {
	case u.AgentMessageChunk != nil:
		return agent.Event{Type: agent.EventMessage, Text: blockText(u.AgentMessageChunk.Content)}, true
	case u.AgentThoughtChunk != nil:
		return agent.Event{Type: agent.EventThought, Text: blockText(u.AgentThoughtChunk.Content)}, true
	case u.ToolCall != nil:
		t := u.ToolCall
		tc := agent.ToolCall{
			ID: string(t.ToolCallId), Title: t.Title, Kind: string(t.Kind), Status: string(t.Status),
			Locations: locations(t.Locations), Input: raw(t.RawInput),
		}
		if tc.Status == "" {
			tc.Status = agent.ToolPending
		}
		toolContent(&tc, t.Content, t.RawOutput)
		return agent.Event{Type: agent.EventToolCall, Tool: &tc}, true
	case u.ToolCallUpdate != nil:
		return agent.Event{Type: agent.EventToolCallUpdate, Tool: toolUpdate(acp.ToolCallUpdate{
			ToolCallId: u.ToolCallUpdate.ToolCallId, Title: u.ToolCallUpdate.Title, Kind: u.ToolCallUpdate.Kind,
			Status: u.ToolCallUpdate.Status, Locations: u.ToolCallUpdate.Locations, Content: u.ToolCallUpdate.Content,
			RawInput: u.ToolCallUpdate.RawInput, RawOutput: u.ToolCallUpdate.RawOutput,
		})}, true
	case u.Plan != nil:
		plan := make([]agent.PlanEntry, 0, len(u.Plan.Entries))
		for _, e := range u.Plan.Entries {
			plan = append(plan, agent.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
		}
		return agent.Event{Type: agent.EventPlan, Plan: plan}, true
	case u.UsageUpdate != nil:
		us := &agent.Usage{}
		if u.UsageUpdate.Size > 0 {
			us.ContextPercent = 100 * float64(u.UsageUpdate.Used) / float64(u.UsageUpdate.Size)
		}
		if u.UsageUpdate.Cost != nil && strings.EqualFold(u.UsageUpdate.Cost.Currency, "credits") {
			us.Credits = u.UsageUpdate.Cost.Amount
		}
		// Nothing qkit keeps (no context used yet, a cost in money rather than credits): no event.
		return agent.Event{Type: agent.EventUsage, Usage: us}, *us != (agent.Usage{})
	}
	return agent.Event{}, false
}

// toolUpdate converts what a tool_call_update (or a permission request) says of a call.
func toolUpdate(t acp.ToolCallUpdate) *agent.ToolCall {
	tc := &agent.ToolCall{ID: string(t.ToolCallId), Locations: locations(t.Locations), Input: raw(t.RawInput)}
	if t.Title != nil {
		tc.Title = *t.Title
	}
	if t.Kind != nil {
		tc.Kind = string(*t.Kind)
	}
	if t.Status != nil {
		tc.Status = string(*t.Status)
	}
	toolContent(tc, t.Content, t.RawOutput)
	return tc
}

// toolContent fills Output (the text content, or kiro's rawOutput.items[].Text) and Diffs.
func toolContent(tc *agent.ToolCall, content []acp.ToolCallContent, rawOutput any) {
	var out []string
	for _, c := range content {
		switch {
		case c.Content != nil:
			if s := blockText(c.Content.Content); s != "" {
				out = append(out, s)
			}
		case c.Diff != nil:
			tc.Diffs = append(tc.Diffs, agent.Diff{Path: c.Diff.Path, OldText: c.Diff.OldText, NewText: c.Diff.NewText})
		}
	}
	if len(out) == 0 {
		out = kiroOutput(rawOutput)
	}
	tc.Output = strings.Join(out, "\n")
}

// kiroOutput reads kiro's rawOutput {items:[{Text:"…"}|{Json:…}]}.
func kiroOutput(rawOutput any) []string {
	m, ok := rawOutput.(map[string]any)
	if !ok {
		return nil
	}
	items, _ := m["items"].([]any)
	var out []string
	for _, it := range items {
		im, _ := it.(map[string]any)
		if s, ok := im["Text"].(string); ok {
			out = append(out, s)
		} else if j, ok := im["Json"]; ok {
			if b, err := json.Marshal(j); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return out
}

func blockText(b acp.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return b.ResourceLink.Uri
	}
	return ""
}

func locations(in []acp.ToolCallLocation) []agent.Location {
	if len(in) == 0 {
		return nil
	}
	out := make([]agent.Location, 0, len(in))
	for _, l := range in {
		loc := agent.Location{Path: l.Path}
		if l.Line != nil {
			loc.Line = *l.Line
		}
		out = append(out, loc)
	}
	return out
}

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// ParseKiroMetadata reads kiro's `_kiro.dev/metadata` notification: {sessionId,
// contextUsagePercentage, meteringUsage:[{value, unit:"credit"}], turnDurationMs}. ok is false
// for a bare {sessionId} keep-alive and for anything that does not parse.
func ParseKiroMetadata(params json.RawMessage) (sessionID string, u agent.Usage, ok bool) {
	var m struct {
		SessionID     string   `json:"sessionId"`
		ContextPct    *float64 `json:"contextUsagePercentage"`
		TurnDuration  *float64 `json:"turnDurationMs"`
		MeteringUsage []struct {
			Value float64 `json:"value"`
			Unit  string  `json:"unit"`
		} `json:"meteringUsage"`
	}
	if json.Unmarshal(params, &m) != nil {
		return "", u, false
	}
	if m.ContextPct != nil {
		u.ContextPercent, ok = *m.ContextPct, true
	}
	if m.TurnDuration != nil {
		u.TurnDurationMs, ok = int64(*m.TurnDuration), true
	}
	for _, mu := range m.MeteringUsage {
		if strings.HasPrefix(strings.ToLower(mu.Unit), "credit") {
			u.Credits += mu.Value
			ok = true
		}
	}
	return m.SessionID, u, ok
}
