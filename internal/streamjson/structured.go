package streamjson

import "github.com/qkit-cli/qkit/internal/structured"

// attemptLine is the structured_attempt event: one answer checked against --schema.
type attemptLine struct {
	Type string `json:"type"` // always "structured_attempt"
	structured.Attempt
}

// Attempt writes the structured_attempt line of an answer checked against the schema.
func (w *Writer) Attempt(a structured.Attempt) {
	w.line(attemptLine{Type: "structured_attempt", Attempt: a})
}
