package table

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTableFitsTheTerminal: on a terminal, a table with a long last column wraps it to the
// terminal's width (here $COLUMNS, the writer being no terminal) instead of running past it.
func TestTableFitsTheTerminal(t *testing.T) {
	rows := [][]string{
		{"ask_user_questions", "enabled", strings.Repeat("Ask the user one to four multiple-choice questions and wait ", 3)},
		{"q-developer-agent", "disabled (optional)", "Run the Amazon Q Developer CLI agent on a prompt"},
	}
	for width, limit := range map[string]int{"60": 60, "100": 100} {
		t.Setenv("COLUMNS", width)
		var b bytes.Buffer
		if err := Render(&b, []string{"name", "state", "description"}, rows); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > limit {
				t.Errorf("COLUMNS=%s: a line of %d columns:\n%s", width, n, b.String())
				break
			}
		}
		if !strings.Contains(b.String(), "q-developer-agent") || !strings.Contains(strings.Join(strings.Fields(b.String()), " "), "wait Ask the user") {
			t.Errorf("COLUMNS=%s: content lost:\n%s", width, b.String())
		}
	}
}

func TestRenderHasHeader(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, []string{"key", "value"}, [][]string{{"agent.command", "q"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "KEY") || !strings.Contains(b.String(), "agent.command") {
		t.Fatalf("got %q", b.String())
	}
}
