// Package structured gets checked JSON out of an agent: the compiled schema (internal/structured/schema
// reads and compiles it), the instruction sent with the prompt, the JSON taken from the reply, its
// validation, the loop that asks again in the same session with the errors, the run's budgets
// (prompts and credits) and the atomic write of the final answer. Front ends (`qkit ask`, the MCP
// tool) plug their backend in through Send; nothing here knows a backend or a protocol.
package structured

import (
	"encoding/json"
	"strings"
)

// Schema is a compiled JSON Schema and the text it came from (internal/structured/schema compiles
// one: the validator is a package apart, since its package init costs every process that links
// it, and the light qkit binary does not).
type Schema struct {
	// Text is the schema as compact JSON: what the instruction shows the agent.
	Text     string
	compiled Validator
	// quick is the schema's quick check (quick.go), nil when it uses a keyword the check does not
	// know.
	quick *quickSchema
	// tree is Text decoded, for explaining a problem (explain.go); draft07 says its $schema is
	// draft-07.
	tree    any
	draft07 bool
}

// Validator checks one decoded JSON value (as json.Unmarshal into an any makes it); its error
// says what is wrong, one problem per line.
type Validator interface {
	Validate(v any) error
	// Steps is how many times checking v applies a part of the schema to a part of v, taking
	// every branch (of anyOf, oneOf...) as the validator does, counted up to limit+1: the
	// validator and explain walk no further than that.
	Steps(v any, limit int) int
}

// NewSchema is the schema text (compact JSON) with its compiled validator.
func NewSchema(text string, v Validator) *Schema {
	s := &Schema{Text: text, compiled: v, quick: compileQuick([]byte(text))}
	if json.Unmarshal([]byte(text), &s.tree) == nil {
		m, _ := s.tree.(map[string]any)
		d, _ := m["$schema"].(string)
		s.draft07 = strings.HasPrefix(d, "http://json-schema.org/draft-07/schema")
	}
	return s
}
