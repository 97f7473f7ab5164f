package cmd

import (
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

// TestStructuredTopicQuotesWhatIsSent: `qkit help structured-output` shows exactly the text
// --schema sends, first prompt and retry.
func TestStructuredTopicQuotesWhatIsSent(t *testing.T) {
	data, err := topicFiles.ReadFile("topics/structured-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	topic := string(data)
	sch, err := schema.Compile([]byte(`{}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimPrefix(sch.Prompt("P"), "P\n\n")
	first = strings.Replace(first, sch.Text, "SCHEMA", 1)
	retry := structured.RetryPrompt([]string{"PROBLEM"})
	for _, want := range []string{first, retry} {
		if !strings.Contains(topic, indent(want)) {
			t.Errorf("the topic does not quote:\n%s", want)
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
