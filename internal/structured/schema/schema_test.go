package schema_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured/schema"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "person.json")
	if err := os.WriteFile(good, []byte("{\n  \"type\": \"object\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(notJSON, []byte("type: object"), 0o644)
	notSchema := filepath.Join(dir, "notschema.json")
	os.WriteFile(notSchema, []byte(`{"type": 5}`), 0o644)
	for _, c := range []struct {
		name, arg, stdin, err string
	}{
		{name: "file", arg: good},
		{name: "stdin", arg: "-", stdin: personSchema},
		{name: "inline", arg: personSchema},
		{name: "inline with blanks", arg: "  " + personSchema},
		{name: "draft-07", arg: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array"}`},
		{name: "boolean schema on stdin", arg: "-", stdin: "true"},
		{name: "missing file", arg: filepath.Join(dir, "nope.json"), err: "nope.json: no such file or directory"},
		{name: "not JSON", arg: notJSON, err: "bad.json: not JSON: "},
		{name: "inline not JSON", arg: `{"type":`, err: "schema given inline: not JSON: "},
		{name: "not a schema", arg: notSchema, err: "notschema.json: not a JSON Schema: "},
		{name: "an array is not a schema", arg: "-", stdin: `[1]`, err: "schema on stdin: not a JSON Schema: a schema is a JSON object"},
		{name: "empty", arg: " ", err: "empty"},
		{name: "a file reference is not loaded", arg: `{"$ref":"file:///etc/passwd"}`, err: "never to a file or URL"},
		{name: "a URL reference is not loaded", arg: `{"$ref":"https://example.invalid/s.json"}`, err: "never to a file or URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sch, err := schema.Load(c.arg, strings.NewReader(c.stdin))
			if c.err == "" {
				if err != nil || sch == nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Load: %v, want a SchemaError with %q", err, c.err)
			}
			if strings.Contains(err.Error(), "qkit:///") {
				t.Errorf("the message shows the internal URL: %v", err)
			}
		})
	}
}
