package schema_test

import (
	"errors"
	"fmt"
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
		// Schemas the compiler reads but the drafts do not allow: refused before anything runs.
		{name: "a type that is no type", arg: `{"type":"objekt"}`, err: `not a JSON Schema: at "/type": "objekt" is not a type: the types are null, boolean, object, array, number, string or integer`},
		{name: "a nested type that is no type", arg: `{"properties":{"a":{"type":["string","text"]}}}`, err: `at "/properties/a/type/1": "text" is not a type`},
		{name: "an empty type list", arg: `{"type":[]}`, err: `at "/type": an array is not a type name or a non-empty array of them`},
		{name: "an empty enum", arg: `{"enum":[]}`, err: `at "/enum": an empty enum: no value can be valid against it`},
		{name: "a negative length", arg: `{"minLength":-1}`, err: `at "/minLength": -1 is not a non-negative integer`},
		{name: "a fractional count", arg: `{"type":"array","items":{"maxItems":1.5}}`, err: `at "/items/maxItems": 1.5 is not a non-negative integer`},
		{name: "a count that is a string", arg: `{"minProperties":"2"}`, err: `at "/minProperties": "2" is not a non-negative integer`},
		{name: "multipleOf zero", arg: `{"multipleOf":0}`, err: `at "/multipleOf": 0 is not a number above 0`},
		{name: "required not names", arg: `{"required":["a",1]}`, err: `at "/required/1": 1 is not a property name`},
		{name: "required twice", arg: `{"required":["a","a"]}`, err: `at "/required/1": "a" is named twice`},
		{name: "an empty allOf", arg: `{"allOf":[]}`, err: `at "/allOf": an array is not a non-empty array of schemas`},
		{name: "a subschema that is a string", arg: `{"properties":{"a/b":"string"}}`, err: `at "/properties/a~1b": a schema is an object, true or false, not "string"`},
		{name: "a bad pattern", arg: `{"pattern":"("}`, err: `at "/pattern": "(" is not a regular expression`},
		{name: "items as an array in 2020-12", arg: `{"items":[{}]}`, err: `draft 2020-12 says prefixItems`},
		{name: "items as an array in draft-07", arg: `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`},
		{name: "an integer count written 2.0", arg: `{"minItems":2.0}`},
		// A $ref loop that does not go into the value: the validator would recurse until the
		// runtime kills the process.
		{name: "a schema that refers to itself", arg: `{"$ref":"#"}`, err: `not a schema qkit can use: at "": the schema comes back here through $ref without going into a part of the value`},
		{name: "two definitions that refer to each other", arg: `{"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/a"}]}}}`, err: `comes back here through $ref`},
		{name: "a loop through an anchor and an $id", arg: `{"$defs":{"a":{"$id":"https://example.invalid/a.json","$anchor":"x","not":{"$ref":"#x"}}},"$ref":"https://example.invalid/a.json"}`, err: `comes back here through $ref`},
		{name: "a loop under if and dependentSchemas", arg: `{"$defs":{"a":{"if":{"dependentSchemas":{"k":{"$ref":"#/$defs/a"}}}}},"properties":{"p":{"$ref":"#/$defs/a"}}}`, err: `comes back here through $ref`},
		{name: "a loop through draft-07's dependencies", arg: `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":{"$ref":"#"},"b":["a"]}}`, err: `comes back here through $ref`},
		// allOf:[{$ref:next},{$ref:next}] 20 times: one value checked 2^20 times, whatever the answer.
		{name: "branches that multiply on one value", arg: doublingChain(20), err: `not a schema qkit can use: at "": the schema applies its parts to one value more than 65536 times here`},
		{name: "branches that multiply on one value, a few times", arg: doublingChain(8)},
		{name: "a recursive schema that goes into the value", arg: `{"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`},
		{name: "a recursive schema through the root", arg: `{"type":"object","additionalProperties":{"$ref":"#"}}`},
		{name: "unknown keywords are the drafts' to allow", arg: `{"x-note":{"type":"objekt"},"type":"object"}`},
		{name: "a schema under an unknown keyword is not checked", arg: `{"type":"object","propertise":{"a":{"enum":[]}}}`},
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

// doublingChain is a schema of n $defs, each applying the next twice to the same value.
func doublingChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
	return b.String()
}

// FuzzCompile: whatever schema text a caller (or an MCP client) sends, Compile returns a schema or
// a *schema.Error; it never panics, and a schema it takes validates any JSON without panicking.
func FuzzCompile(f *testing.F) {
	deepA := strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat(`}`, 30)
	deepArray := strings.Repeat(`[`, 30) + strings.Repeat(`]`, 30)
	for _, s := range []string{
		personSchema, `true`, `false`, `[1]`, `{"type":5}`, `{"type":"objekt"}`, `{"enum":[]}`, `{"minLength":-1}`,
		`{"type":["string","string"]}`, `{"maxItems":1.5}`, `{"multipleOf":0}`, `{"required":[1]}`, `{"allOf":[]}`,
		`{"properties":{"a":"b"}}`, `{"pattern":"("}`, `{"patternProperties":{"(":{}}}`, `{"items":[{}]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{}],"dependencies":{"a":["b"],"c":{"type":"x"}}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`, `{"$ref":"file:///etc/passwd"}`, `{"$ref":"#"}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}}}`,
		`{"dependentRequired":{"a":["b","b"]}}`, `{"type":"object","properties":{"a":{"minimum":"1"}}}`,
		// Schemas that multiply the work: on one value, and at each level of the value.
		doublingChain(20), doublingChain(4),
		`{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":{"$ref":"#"},"b":["a"]}}`,
		`{"anyOf":[{"type":"object","properties":{"a":{"$ref":"#"}}},{"type":"object","properties":{"a":{"$ref":"#"}},"required":["z"]}]}`,
		`{"oneOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}},"required":["z"]}]}`,
		`{"type":"array","items":{"$ref":"#"},"contains":{"$ref":"#"},"minContains":0}`,
		`{"properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}},"unevaluatedProperties":{"$ref":"#"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sch, err := schema.Compile([]byte(text), "fuzzed")
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || sch != nil {
				t.Fatalf("Compile(%q) = %v, %v: want nil and a *schema.Error", text, sch, err)
			}
			return
		}
		for _, doc := range []string{`{}`, `[]`, `"a"`, `1.5`, `null`, `{"a":[1,"b",{"c":true}]}`, deepA, deepArray} {
			_ = sch.Validate([]byte(doc))
		}
	})
}
