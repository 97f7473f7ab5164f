package approval

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/prompt"
)

// TestTerminalAskerShowsAgentTextEscaped: the title, kind, path and input of a permission request
// come from the agent; the terminal that asks a person shows their control characters escaped, so
// a title cannot clear the screen, rewrite the question or set the clipboard.
func TestTerminalAskerShowsAgentTextEscaped(t *testing.T) {
	var out bytes.Buffer
	ta := &TerminalAsker{Prompter: &prompt.Stub{Answers: []any{2}}, Out: &out}
	req := acpclient.PermissionRequest{Tool: agent.ToolCall{
		ID: "t1", Title: "ls\x1b[2J", Kind: "execute\x1b]52;c;eA==\x07",
		Locations: []agent.Location{{Path: "/w/a\u202eb"}}, Input: []byte(`"rm -rf\u001b[1A"`),
	}}
	got, err := ta.AskPermission(context.Background(), req)
	if err != nil || got != Reject {
		t.Fatalf("AskPermission = %q, %v", got, err)
	}
	s := out.String()
	if strings.ContainsAny(s, "\x1b\x07\u202e") {
		t.Errorf("the terminal got raw control characters: %q", s)
	}
	for _, want := range []string{`\x1b]52;c;eA==\x07`, `a\u202eb`, `rm -rf\u001b[1A`} {
		if !strings.Contains(s, want) {
			t.Errorf("%q not shown escaped in %q", want, s)
		}
	}
}
