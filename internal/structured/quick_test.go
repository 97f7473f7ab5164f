package structured_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

// quickSchemas are schemas the quick check knows, between them every keyword it reads.
var quickSchemas = []string{
	`{"type":"object","required":["name","age"],"additionalProperties":false,"properties":{"name":{"type":"string","minLength":1,"maxLength":5},"age":{"type":"integer","minimum":0,"exclusiveMaximum":150}}}`,
	`{"type":"array","minItems":1,"maxItems":3,"items":{"enum":["error","warning",null,true]}}`,
	`{"type":["number","null"],"minimum":-1.5,"maximum":1e3,"exclusiveMinimum":-2}`,
	`{"properties":{"a":false,"b":true,"c":{"const":"x"}},"additionalProperties":{"type":"boolean"},"title":"t","description":"d"}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`,
	`true`,
	`false`,
}

// quickDocs are documents for them: valid, invalid, and the cases the quick check leaves to the
// validator (escaped names, long numbers, 1.0 as an integer).
var quickDocs = []string{
	`{"name":"Ada","age":36}`, `{"name":"Ada","age":36,"x":1}`, `{"name":"","age":36}`, `{"name":"Ada"}`,
	`{"name":"Adaaaa","age":36}`, `{"name":"Ada","age":-1}`, `{"name":"Ada","age":150}`, `{"name":"Ada","age":149}`,
	`{"name":"Ada","age":36.0}`, `{"name":"Ada","age":3.6e1}`, `{"name":"\u00c5da","age":1}`, `{"n\u0061me":"Ada","age":1}`,
	`{"name":"Ada","age":36,"age":"x"}`, `{"name":"Ada","age":12345678901234567890}`, `{"name":"Åda","age":1}`,
	`["error"]`, `["error","warning",null,true]`, `[]`, `["note"]`, `[false]`, `["err\u006fr"]`, `["error","error","error","error"]`,
	`-1.5`, `-1.6`, `1000`, `1000.0001`, `null`, `"1"`, `-1.9`, `1e3`, `0.5e-3`, `1e400`, `[1e400]`, `{"b":-1e999}`,
	`{"a":1}`, `{"b":[1,{"x":2}]}`, `{"c":"x"}`, `{"c":"y"}`, `{"d":true}`, `{"d":1}`, `{}`,
	`{"s":"x"}`, `{"s":1}`, `{"s":"x\n\"y\""}`,
	`{"name":"Ada","age":36} x`, `{"name":"Ada" "age":36}`, `[1,]`, `01`, `"\x"`, "\"\x01\"", `[` + strings.Repeat(`[`, 600) + strings.Repeat(`]`, 601),
}

// TestQuickCheckNeverLooser: whenever the quick check passes a document, the validator does too
// (the quick check decides alone only then); and it does pass the plain valid cases, so Validate
// takes the quick path for them.
func TestQuickCheckNeverLooser(t *testing.T) {
	mustPass := map[string]bool{`{"name":"Ada","age":36}`: true, `{"name":"Ada","age":149}`: true, `["error","warning",null,true]`: true,
		`-1.5`: true, `1e3`: true, `null`: true, `{"b":[1,{"x":2}]}`: true, `{"c":"x"}`: true, `{"s":"x\n\"y\""}`: true}
	for i, src := range quickSchemas {
		sch, err := schema.Compile([]byte(src), "test")
		if err != nil {
			t.Fatal(err)
		}
		if !structured.HasQuick(sch) {
			t.Fatalf("schema %d has no quick check: %s", i, src)
		}
		for _, doc := range quickDocs {
			quick := structured.QuickCheck(sch, doc)
			var v any
			valid := json.Unmarshal([]byte(doc), &v) == nil && structured.Full(sch).Validate(v) == nil
			if quick && !valid {
				t.Errorf("schema %d, %s: the quick check passes what the validator refuses", i, doc)
			}
			if valid && mustPass[doc] && !quick {
				t.Errorf("schema %d, %s: valid, but the quick check leaves it to the validator", i, doc)
			}
		}
	}
}

// TestQuickCheckUnknownKeywords: a schema with a keyword (or a form of one) the quick check does not
// read has none, so the validator alone decides.
func TestQuickCheckUnknownKeywords(t *testing.T) {
	for _, src := range []string{
		`{"type":"string","pattern":"^a"}`, `{"format":"email"}`, `{"$defs":{"a":{}},"$ref":"#/$defs/a"}`,
		`{"items":[{"type":"string"}]}`, `{"enum":[1,2]}`, `{"maximum":12345678901234567}`, `{"minLength":1.5}`,
		`{"anyOf":[{"type":"string"}]}`, `{"properties":{"a":{"uniqueItems":true}}}`, `{"x-custom":1}`,
	} {
		if structured.CompilesQuick([]byte(src)) {
			t.Errorf("%s: has a quick check", src)
		}
	}
}

// FuzzQuickCheck: for any document, the quick check passes it only where the validator does, and
// reads as valid JSON only what json.Valid does; explain finds a problem wherever the validator does.
func FuzzQuickCheck(f *testing.F) {
	for _, d := range quickDocs {
		f.Add(d)
	}
	// Answers nested deep, for the schemas whose work doubles at each level.
	f.Add(nestedA(30, `{}`))
	f.Add(nestedA(30, `1`))
	f.Add(strings.Repeat(`[`, 30) + strings.Repeat(`]`, 30))
	var schemas []*structured.Schema
	for _, src := range quickSchemas {
		sch, err := schema.Compile([]byte(src), "test")
		if err != nil {
			f.Fatal(err)
		}
		schemas = append(schemas, sch)
	}
	var costly []*structured.Schema
	for _, src := range hostileSchemas {
		sch, err := schema.Compile([]byte(src), "test")
		if err != nil {
			f.Fatal(err)
		}
		costly = append(costly, sch)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		// Validate stays within its step limit (cost_test.go): it says yes, or names one problem.
		for i, sch := range costly {
			if err := sch.Validate([]byte(doc)); err != nil && len(structured.Problems(err)) != 1 {
				t.Fatalf("costly schema %d, %q: %v", i, doc, err)
			}
		}
		if structured.QuickCheck(nil, doc) && !json.Valid([]byte(doc)) {
			t.Fatalf("%q: the quick reader reads as JSON what json.Valid does not", doc)
		}
		if structured.ValidJSON(doc) != json.Valid([]byte(doc)) {
			t.Fatalf("%q: validJSON differs from json.Valid", doc)
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			for i, sch := range schemas {
				if structured.QuickCheck(sch, doc) {
					t.Fatalf("schema %d, %q: the quick check passes what encoding/json does not decode", i, doc)
				}
			}
			return
		}
		for i, sch := range schemas {
			if structured.QuickCheck(sch, doc) && structured.Full(sch).Validate(v) != nil {
				t.Fatalf("schema %d, %q: the quick check passes what the validator refuses", i, doc)
			}
			// What the validator refuses, explain places (these schemas use only keywords it
			// follows): never the validator's own message at the root.
			if structured.Full(sch).Validate(v) != nil {
				if p := structured.Explain(sch, v); p == "" {
					t.Fatalf("schema %d, %q: the validator refuses it and explain finds no problem", i, doc)
				}
			}
		}
	})
}
