package structured_test

import "testing"

// TestObjectsOnly: a schema whose root accepts only objects, which MCP's structuredContent needs,
// is told from one that lets an array, a string or anything through.
func TestObjectsOnly(t *testing.T) {
	for _, c := range []struct {
		schema string
		want   bool
	}{
		{personSchema, true},
		{`{"type":["object"]}`, true},
		{`{"const":{"a":1}}`, true},
		{`{"enum":[{"a":1},{"b":2}]}`, true},
		{`{"$ref":"#/$defs/p","$defs":{"p":{"type":"object"}}}`, true},
		{`{"allOf":[{"required":["a"]},{"$ref":"#/$defs/a~1b"}],"$defs":{"a/b":{"type":"object"}}}`, true},
		{`{"anyOf":[{"type":"object"},{"const":{}}]}`, true},
		{`{"type":"array"}`, false},
		{`{"type":"string"}`, false},
		{`{"type":["object","null"]}`, false},
		{`{"required":["a"]}`, false},
		{`{"properties":{"a":{"type":"object"}}}`, false},
		{`true`, false},
		{`false`, false},
		{`{"enum":[{"a":1},[1]]}`, false},
		{`{"oneOf":[{"type":"object"},{"type":"array"}]}`, false},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"type":"object"},{"type":"null"}]}}}`, false},
		// draft-07 ignores the keywords beside $ref.
		{`{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/a","type":"object","definitions":{"a":{"type":"array"}}}`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/a","definitions":{"a":{"type":"object"}}}`, true},
	} {
		if got := mustCompile(t, c.schema).ObjectsOnly(); got != c.want {
			t.Errorf("ObjectsOnly(%s) = %v, want %v", c.schema, got, c.want)
		}
	}
}
