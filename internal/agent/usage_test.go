package agent

import (
	"reflect"
	"testing"
)

func TestUsageAdd(t *testing.T) {
	var u Usage
	u.Add(Usage{Credits: 0.5, InputTokens: 10, OutputTokens: 3, ContextPercent: 12, TurnDurationMs: 900})
	u.Add(Usage{Credits: 0.25, InputTokens: 5, OutputTokens: 2}) // no context or duration: the last ones stay
	u.Add(Usage{ContextPercent: 15, TurnDurationMs: 1200})
	want := Usage{Credits: 0.75, InputTokens: 15, OutputTokens: 5, ContextPercent: 15, TurnDurationMs: 1200}
	if u != want {
		t.Fatalf("got %+v, want %+v", u, want)
	}
}

func TestToolLog(t *testing.T) {
	var l ToolLog
	l.Record(Event{Type: EventMessage, Text: "hi"})
	l.Record(Event{Type: EventToolCall, Tool: &ToolCall{ID: "a", Title: "Reading", Kind: "read"}})
	l.Record(Event{Type: EventToolCall, Tool: &ToolCall{ID: "b", Title: "Writing", Kind: "edit"}})
	l.Record(Event{Type: EventToolCallUpdate, Tool: &ToolCall{ID: "a", Status: "completed"}})
	l.Record(Event{Type: EventPermissionDecided, Permission: &Permission{Tool: ToolCall{ID: "b", Denied: true}}})
	l.Record(Event{Type: EventPermissionDecided, Permission: &Permission{Tool: ToolCall{ID: "unknown", Denied: true}}})
	want := []ToolCall{
		{ID: "a", Title: "Reading", Kind: "read", Status: "completed"},
		{ID: "b", Title: "Writing", Kind: "edit", Denied: true},
	}
	if !reflect.DeepEqual(l.Calls, want) {
		t.Fatalf("got %+v\nwant %+v", l.Calls, want)
	}
}
