package structured_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

// nestedA is {"a":{"a":...leaf...}}, depth deep.
func nestedA(depth int, leaf string) string {
	return strings.Repeat(`{"a":`, depth) + leaf + strings.Repeat(`}`, depth)
}

// Schemas whose every level applies the schema twice to the next one: the validator's work
// doubles at each level of the answer (measured unbounded: 13 s at depth 20 for anyOf, 54 s and
// a 450 MB message when the answer is invalid).
var hostileSchemas = map[string]string{
	"anyOf":                `{"anyOf":[{"type":"object","properties":{"a":{"$ref":"#"}}},{"type":"object","properties":{"a":{"$ref":"#"}},"required":["z"]}]}`,
	"oneOf":                `{"oneOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}},"required":["z"]}]}`,
	"allOf":                `{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`,
	"patternProperties":    `{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^a$":{"$ref":"#"}}}`,
	"items and contains":   `{"type":"array","items":{"$ref":"#"},"contains":{"$ref":"#"},"minContains":0}`,
	"draft-07 definitions": `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"n":{"anyOf":[{"properties":{"a":{"$ref":"#/definitions/n"}}},{"properties":{"a":{"$ref":"#/definitions/n"}}}]}},"$ref":"#/definitions/n"}`,
}

// TestCheckCostLimit: an answer whose check would take more steps than the limit is refused
// with a problem naming the limit, before the validator or explain start (each would take
// minutes at depth 25); the same schema checks a shallow answer.
func TestCheckCostLimit(t *testing.T) {
	for name, src := range hostileSchemas {
		t.Run(name, func(t *testing.T) {
			sch, err := schema.Compile([]byte(src), "test")
			if err != nil {
				t.Fatal(err)
			}
			deep, shallow, leaf := nestedA(25, `{}`), nestedA(5, `{}`), `{}`
			if strings.Contains(src, `"array"`) {
				deep, shallow, leaf = strings.Repeat("[", 25)+strings.Repeat("]", 25), "[[[[]]]]", "[]"
			}
			if err := sch.Validate([]byte(shallow)); err != nil {
				t.Fatalf("shallow answer: %v", err)
			}
			for _, doc := range []string{deep, strings.Replace(deep, leaf, "1", 1)} {
				err := sch.Validate([]byte(doc))
				p := structured.Problems(err)
				if len(p) != 1 || !strings.HasPrefix(p[0], `at "": checking this answer against the schema would take more than `) ||
					!strings.Contains(p[0], "a less deeply nested answer may be checked") {
					t.Fatalf("depth 25: %v, want the step limit", err)
				}
			}
		})
	}
}

// TestCheckCostRealSchemas: the schemas of the tests and of the benchmark take a few steps per
// value of their answers, far inside the limit.
func TestCheckCostRealSchemas(t *testing.T) {
	sch := mustCompile(t, findingsSchema)
	doc, err := structured.Extract(reply100KB())
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	steps, values := structured.Full(sch).Steps(v, 1<<30), structured.CountValues(v)
	if steps > 4*values {
		t.Errorf("findings: %d steps for %d values", steps, values)
	}
}
