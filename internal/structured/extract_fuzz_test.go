package structured_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
)

// FuzzExtract: whatever the agent replies, Extract returns valid JSON taken from the reply, or an
// *ExtractError; it never panics.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"{}", "  [1, 2]\n", "Sure:\n```json\n{\"a\":1}\n```\n", "```\n{\"a\":1}\n```", "~~~json\n{}\n~~~",
		"```json\n{\"a\":1}\n```\n```json\n{\"b\":2}\n```", "```json\n{\"a\": }\n```", "````json\n```\n````",
		"no json", "```json", "```", "   ```json\n{}\n   ```", "```json {\"a\":1}```", "\r\n```json\r\n{}\r\n```\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		doc, err := structured.Extract(reply)
		if err != nil {
			var ee *structured.ExtractError
			if !errors.As(err, &ee) || doc != nil {
				t.Fatalf("Extract(%q) = %q, %v: want nil and an *ExtractError", reply, doc, err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("Extract(%q) = %q: not valid JSON", reply, doc)
		}
		if !strings.Contains(reply, string(doc)) {
			t.Fatalf("Extract(%q) = %q: not taken from the reply", reply, doc)
		}
	})
}
