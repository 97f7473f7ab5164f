package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// ValidationError lists what is wrong with a JSON document against the schema, one problem per
// entry, each "at POINTER: message" with the place in the document as a JSON pointer
// ("at \"/age\": \"36\" is a string; the schema wants an integer"): the lines a retry sends back to
// the agent.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "the JSON does not match the schema: " + e.Problems[0]
	}
	return fmt.Sprintf("the JSON does not match the schema (%d problems): %s", len(e.Problems), joinProblems(e.Problems))
}

func joinProblems(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// Validate checks doc (one JSON document) against the schema; a failure is a *ValidationError
// with the validator's first problem.
func (s *Schema) Validate(doc []byte) error {
	if s.quick != nil && quickCheck(s.quick, string(doc)) {
		return nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return &ValidationError{Problems: []string{"not JSON: " + err.Error()}}
	}
	if limit := stepLimit(v); s.compiled.Steps(v, limit) > limit {
		return &ValidationError{Problems: []string{fmt.Sprintf(`at "": checking this answer against the schema would take more than %d steps `+
			`(the schema's anyOf, oneOf, allOf or $ref apply its parts to the same values over and over, more at each level the answer nests): `+
			`a less deeply nested answer may be checked`, limit)}}
	}
	if err := s.compiled.Validate(v); err != nil {
		return &ValidationError{Problems: []string{s.problem(v, err)}}
	}
	return nil
}

// The validator (and explain after it) cannot be stopped once started, and a schema whose
// branches each reach the schema again for a part of the value costs 2^depth: an answer nested
// 20 deep held a core for a minute, and in mcp serve a call would hold one for hours. So an
// answer is checked only when its steps (Validator.Steps) stay within stepLimit: 1<<20, plus 16
// for each value in the answer. A real schema takes a few steps per value (the findings schema
// of bench_test.go about 2, a union of a dozen object types under anyOf about 15), and below a
// million steps any answer is checked (a second or so at the validator's 1 µs a step), so only a
// schema that multiplies its work at each level is stopped; the most an answer can cost is then
// linear in its size, as decoding it is.
func stepLimit(v any) int {
	return 1<<20 + 16*countValues(v)
}

// countValues is how many JSON values v holds, itself included.
func countValues(v any) int {
	n := 1
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			n += countValues(x)
		}
	case map[string]any:
		for _, x := range v {
			n += countValues(x)
		}
	}
	return n
}

// problem says what is wrong with v, which the validator refused with err: explain's words when it
// can tell (the place in the document and the value as JSON), else the validator's message, placed
// at the document's root. It is made visible on one line: it quotes the agent's JSON, and it
// reaches the terminal (a warning per answer, the final error) as well as the retry prompt.
func (s *Schema) problem(v any, err error) string {
	msg := explain(s.tree, s.draft07, v)
	if msg == "" {
		msg = `at "": ` + validatorMessage(err)
	}
	return termtext.VisibleLine(strings.ReplaceAll(msg, "\n", "; "))
}

// validatorMessage is the validator's message without the schema places it wraps it in
// ("validating root: validating /properties/a: ").
func validatorMessage(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	return msg
}

// Problems is what err (from Extract or Validate) says is wrong, as retry lines.
func Problems(err error) []string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Problems
	}
	return []string{err.Error()}
}
