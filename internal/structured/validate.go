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
// entry, each naming where in the schema it failed ("validating /properties/age: type: ..."):
// the lines a retry sends back to the agent.
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
	if err := s.compiled.Validate(v); err != nil {
		return &ValidationError{Problems: []string{problem(err)}}
	}
	return nil
}

// problem is the validator's message on one line, made visible: the message quotes the agent's
// decoded JSON (a value as it is, escapes such as \u001b already decoded), and it reaches the
// terminal (a warning per answer, the final error) as well as the retry prompt.
func problem(err error) string {
	return termtext.VisibleLine(strings.ReplaceAll(err.Error(), "\n", "; "))
}

// Problems is what err (from Extract or Validate) says is wrong, as retry lines.
func Problems(err error) []string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Problems
	}
	return []string{err.Error()}
}
