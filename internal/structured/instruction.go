package structured

import (
	"fmt"
	"strings"
)

// The instruction's fixed lines; `qkit help structured-output` quotes them (a test keeps the two
// the same).
const (
	instructionHead = "--- ANSWER FORMAT ---\n" +
		"Answer with one JSON document that is valid against the JSON Schema below. Reply with the JSON " +
		"alone (no text before or after it), or put it alone in one ```json fenced block. Never give " +
		"more than one JSON document.\n" +
		"JSON Schema:\n"
	instructionTail = "\n--- END ANSWER FORMAT ---"
	retryHead       = "Your previous reply was not the JSON asked for:\n"
	retryTail       = "Answer again with one JSON document that is valid against the same JSON Schema " +
		"(from the ANSWER FORMAT above), and nothing else."
)

// Prompt is the prompt sent on the first attempt: the caller's prompt, a blank line, then the
// instruction and the schema (compact JSON) between ANSWER FORMAT markers.
func (s *Schema) Prompt(prompt string) string {
	return strings.TrimRight(prompt, "\n") + "\n\n" + instructionHead + s.Text + instructionTail
}

// maxRetryProblems bounds how many problems a retry prompt lists (a reply can fail thousands
// of keywords at once).
const maxRetryProblems = 20

// RetryPrompt is the prompt of a retry, sent in the same session: what was wrong with the last
// reply (one "- " line each), then the request to answer again.
func RetryPrompt(problems []string) string {
	var b strings.Builder
	b.WriteString(retryHead)
	for i, p := range problems {
		if i == maxRetryProblems {
			fmt.Fprintf(&b, "- ... and %d more\n", len(problems)-i)
			break
		}
		b.WriteString("- ")
		b.WriteString(p)
		b.WriteByte('\n')
	}
	b.WriteString(retryTail)
	return b.String()
}
