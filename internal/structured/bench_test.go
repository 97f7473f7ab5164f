package structured_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
)

// reply100KB is a reply of about 100 KB: a sentence, then a ```json block with an array of
// records, then a closing sentence, as an agent answers.
func reply100KB() string {
	var b strings.Builder
	b.WriteString("Here are the findings you asked for.\n\n```json\n{\"findings\": [\n")
	for i := 0; b.Len() < 100<<10; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  {"file": "internal/pkg%d/file%d.go", "line": %d, "severity": "warning", "message": "a finding that is long enough to look real, number %d"}`, i%40, i, i*7+1, i)
	}
	b.WriteString("\n]}\n```\n\nTell me if you want more.\n")
	return b.String()
}

const findingsSchema = `{"type":"object","required":["findings"],"additionalProperties":false,"properties":{"findings":{"type":"array","items":{
"type":"object","required":["file","line","severity","message"],"additionalProperties":false,"properties":{
"file":{"type":"string","minLength":1},"line":{"type":"integer","minimum":1},"severity":{"enum":["error","warning","note"]},"message":{"type":"string"}}}}}}`

// BenchmarkExtract100KB is the extraction alone.
func BenchmarkExtract100KB(b *testing.B) {
	reply := reply100KB()
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		if _, err := structured.Extract(reply); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractValidate100KB is the cost --schema adds to a run with a 100 KB reply:
// extraction and validation (the target: at most 1 ms).
func BenchmarkExtractValidate100KB(b *testing.B) {
	sch := mustCompile(b, findingsSchema)
	reply := reply100KB()
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		doc, err := structured.Extract(reply)
		if err != nil {
			b.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}
