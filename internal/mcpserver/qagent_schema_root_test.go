package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// TestQAgentOutputSchemaRefused: through the Go SDK client, an output_schema the call cannot honour
// fails the call with isError before the agent runs: a root that may accept something else than
// an object (MCP's structuredContent is an object; the TypeScript SDK rejects the whole result
// otherwise), a schema the drafts do not allow, and a $ref loop (which made the validator recurse
// until the server process died).
func TestQAgentOutputSchemaRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		schema map[string]any
		want   string
	}{
		{"array root", map[string]any{"type": "array"}, `invalid schema output_schema: its root must accept only a JSON object ("type": "object")`},
		{"string root", map[string]any{"type": "string"}, `its root must accept only a JSON object`},
		{"no type", map[string]any{"required": []any{"name"}}, `its root must accept only a JSON object`},
		{"object or null", map[string]any{"type": []any{"object", "null"}}, `its root must accept only a JSON object`},
		{"a type that is no type", map[string]any{"type": "objekt"}, `invalid schema output_schema: not a JSON Schema: at "/type": "objekt" is not a type`},
		{"an empty enum", map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"enum": []any{}}}}, `at "/properties/k/enum": an empty enum`},
		{"a negative length", map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"minLength": -1}}}, `at "/properties/k/minLength": -1 is not a non-negative integer`},
		{"a $ref loop", map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"$ref": "#/properties/k"}}}, `at "/properties/k": the schema comes back here through $ref`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "argv.jsonl")
			replies := writeReplies(t, `[1,2]`)
			cs, _ := parityServer(t, []string{"FAKEQ_RECORD=" + record, "FAKEQ_REPLIES=" + replies})
			res := callWithProgress(t, cs, map[string]any{"prompt": "Which?", "output_schema": c.schema})
			if text := mcptest.Text(res); !res.IsError || res.StructuredContent != nil || !strings.Contains(text, c.want) {
				t.Fatalf("isError %v, structuredContent %v: %q lacks %q", res.IsError, res.StructuredContent, text, c.want)
			}
			if _, err := os.Stat(record); err == nil {
				t.Fatalf("the agent ran for output_schema %v", c.schema)
			}
		})
	}
}

// TestQAgentOutputSchemaObjectRoot: a root that is an object through $ref and allOf is taken, on
// both backends: the result's structuredContent is the object, valid for the client's validator.
func TestQAgentOutputSchemaObjectRoot(t *testing.T) {
	t.Parallel()
	sch := map[string]any{
		"allOf": []any{map[string]any{"$ref": "#/$defs/list"}},
		"$defs": map[string]any{"list": map[string]any{"type": "object", "required": []any{"items"},
			"properties": map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}}}},
	}
	for _, b := range []struct {
		name string
		env  []string
	}{{"chat", nil}, {"acp", []string{"QKIT_AGENT_BACKEND=acp"}}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			replies := writeReplies(t, `{"items":[1,2]}`)
			cs, _ := parityServer(t, append([]string{"FAKEQ_REPLIES=" + replies}, b.env...))
			res := callWithProgress(t, cs, map[string]any{"prompt": "Which?", "output_schema": sch})
			if res.IsError {
				t.Fatalf("isError: %s", mcptest.Text(res))
			}
			if _, ok := res.StructuredContent.(map[string]any); !ok {
				t.Fatalf("structuredContent %#v is not an object", res.StructuredContent)
			}
			clientValidate(t, sch, res.StructuredContent)
		})
	}
}
