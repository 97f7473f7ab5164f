package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// personSchema is the output_schema of these tests.
var personSchema = map[string]any{
	"type":     "object",
	"required": []any{"name", "age"},
	"properties": map[string]any{
		"name": map[string]any{"type": "string"},
		"age":  map[string]any{"type": "integer"},
	},
}

// clientValidate validates v against schema with the client's own JSON Schema library (the one
// the Go SDK uses), not qkit's validator.
func clientValidate(t *testing.T, schema map[string]any, v any) {
	t.Helper()
	data, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(v); err != nil {
		t.Fatalf("structuredContent %v is not valid against output_schema: %v", v, err)
	}
}

// writeReplies writes the fake's FAKEQ_REPLIES file: the replies in order.
func writeReplies(t *testing.T, replies ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "replies.txt")
	if err := os.WriteFile(f, []byte(strings.Join(replies, "\n%%\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestQAgentOutputSchema: q-developer-agent with output_schema, on both backends, through the
// Go SDK client: an answer fixed by a retry in the same session comes back as structuredContent
// the client validates; answers never valid are isError with the errors and the last reply.
func TestQAgentOutputSchema(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		env  []string
	}{{"chat", nil}, {"acp", []string{"QKIT_AGENT_BACKEND=acp"}}} {
		t.Run(b.name+"/fixed by a retry", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record, sessions := filepath.Join(dir, "argv.jsonl"), filepath.Join(dir, "sessions.log")
			replies := writeReplies(t, `{"name":"Ada Lovelace"}`, "Here it is:\n```json\n{\"name\":\"Ada Lovelace\",\"age\":36}\n```\n")
			cs, _ := parityServer(t, append([]string{"FAKEQ_REPLIES=" + replies, "FAKEQ_RECORD=" + record, "FAKEQ_ACP_SESSIONS=" + sessions}, b.env...))
			res := callWithProgress(t, cs, map[string]any{"prompt": "Who wrote the first program?", "output_schema": personSchema})
			if res.IsError {
				t.Fatalf("isError: %s", mcptest.Text(res))
			}
			if res.StructuredContent == nil {
				t.Fatalf("no structuredContent: %s", mcptest.Text(res))
			}
			clientValidate(t, personSchema, res.StructuredContent)
			if got := mcptest.Text(res); got != `{"name":"Ada Lovelace","age":36}` {
				t.Fatalf("text %q, want the JSON", got)
			}
			// The retry went to the first answer's conversation.
			if b.name == "chat" {
				data, _ := os.ReadFile(record)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				if len(lines) != 2 || strings.Contains(lines[0], `"--resume"`) || !strings.Contains(lines[1], `"--resume"`) ||
					!strings.Contains(lines[1], `at \"\": the required property \"age\" is missing`) {
					t.Fatalf("runs:\n%s", data)
				}
			} else {
				data, _ := os.ReadFile(sessions)
				log := string(data)
				// One agent process and one connection: the retry is a second session/prompt.
				if strings.Count(log, "start process ") != 1 || strings.Count(log, "new session 1 ") != 1 ||
					strings.Contains(log, "load session") || strings.Count(log, "prompt session 1 ") != 2 || strings.Contains(log, "session 2") {
					t.Fatalf("sessions:\n%s", log)
				}
			}
		})
		t.Run(b.name+"/never valid", func(t *testing.T) {
			t.Parallel()
			replies := writeReplies(t, "No idea.")
			cs, _ := parityServer(t, append([]string{"FAKEQ_REPLIES=" + replies}, b.env...))
			res := callWithProgress(t, cs, map[string]any{"prompt": "Who?", "output_schema": personSchema})
			text := mcptest.Text(res)
			if !res.IsError || res.StructuredContent != nil {
				t.Fatalf("isError %v, structuredContent %v: %s", res.IsError, res.StructuredContent, text)
			}
			for _, w := range []string{"no answer held JSON valid against output_schema after 3 answers", "- no JSON found", "The last reply:\nNo idea."} {
				if !strings.Contains(text, w) {
					t.Fatalf("%q lacks %q", text, w)
				}
			}
		})
	}
}

// TestQAgentOutputSchemaInvalid: a schema that does not compile, or that refers outside itself,
// fails the call before the agent runs.
func TestQAgentOutputSchemaInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		schema map[string]any
		want   string
	}{
		{map[string]any{"type": 12}, "invalid schema output_schema: not a JSON Schema"},
		{map[string]any{"$ref": "file:///etc/passwd"}, "never to a file or URL"},
	} {
		record := filepath.Join(t.TempDir(), "argv.jsonl")
		cs, _ := parityServer(t, []string{"FAKEQ_RECORD=" + record})
		res := callWithProgress(t, cs, map[string]any{"prompt": "Who?", "output_schema": c.schema})
		if text := mcptest.Text(res); !res.IsError || !strings.Contains(text, c.want) {
			t.Fatalf("isError %v: %q lacks %q", res.IsError, text, c.want)
		}
		if _, err := os.Stat(record); err == nil {
			t.Fatalf("the agent ran for output_schema %v", c.schema)
		}
	}
}

// TestQAgentOutputSchemaTimeout: an answer cut by the timeout is not checked and asked again:
// the call ends as timed out after one run, with the partial reply.
func TestQAgentOutputSchemaTimeout(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "argv.jsonl")
	d := parityDeps(t, []string{"FAKEQ_RECORD=" + record, `FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_SLEEP=60s", "AGENT_TIMEOUT=2"})
	cs := mcptest.ConnectWith(t, d, timeoutOnPartial(t, d, 2*time.Second, "partial answer"))
	res := callWithProgress(t, cs, map[string]any{"prompt": "Who?", "output_schema": personSchema})
	text := mcptest.Text(res)
	if !res.IsError || !strings.Contains(text, "timed out before a valid answer") || !strings.Contains(text, "partial answer") {
		t.Fatalf("isError %v: %q", res.IsError, text)
	}
	if data, _ := os.ReadFile(record); strings.Count(string(data), "\n") != 1 {
		t.Fatalf("the agent ran more than once:\n%s", data)
	}
}
