package structured

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidationError lists what is wrong with a JSON document against the schema, one problem per
// entry, each "at PATH: what" (PATH a JSON pointer into the document, "/" for the whole of it):
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

// Validate checks doc (one JSON document) against the schema; a failure is a *ValidationError.
func (s *Schema) Validate(doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return &ValidationError{Problems: []string{"not JSON: " + err.Error()}}
	}
	err = s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Problems: []string{err.Error()}}
	}
	return &ValidationError{Problems: problems(ve.BasicOutput())}
}

// problems flattens the validator's basic output to its leaf errors (the units that only say
// "a subschema failed" repeat what their causes say).
func problems(out *jsonschema.OutputUnit) []string {
	var leaves []string
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		at := u.InstanceLocation
		if at == "" {
			at = "/"
		}
		leaves = append(leaves, "at "+strconv.Quote(at)+": "+u.Error.String())
	}
	if len(leaves) == 0 && out.Error != nil {
		leaves = append(leaves, "at \"/\": "+out.Error.String())
	}
	return leaves
}

// Problems is what err (from Extract or Validate) says is wrong, as retry lines.
func Problems(err error) []string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Problems
	}
	return []string{err.Error()}
}
