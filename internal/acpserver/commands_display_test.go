package acpserver

import (
	"context"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/commands"
)

// silentExec runs nothing, prints nothing and exits with code: the slash command's answer is then
// the core's result message, which names the command line.
type silentExec struct{ code int }

func (silentExec) Check([]string) error { return nil }

func (e silentExec) Run(context.Context, []string, string, string) commands.Output {
	return commands.Output{ExitCode: e.code}
}

// TestSlashCommandAnswerShowsArgumentsVisibly: the answer to a slash command whose argument holds
// an escape sequence and a bidirectional override names the command line as Call.Display shows it
// (the editor shows it to a person), whether the command succeeded or failed without a word.
func TestSlashCommandAnswerShowsArgumentsVisibly(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 4} {
		h := startWith(t, "", func(o *Options) {
			o.Commands = commands.New([]commands.Entry{
				{Path: []string{"context", "show"}, Short: "Show the context files in use", Usage: "context show [path]", Access: commands.Read},
			}, silentExec{code}, commands.Options{})
		})
		h.initialize()
		id := h.newSession(t.TempDir())
		h.mustPrompt(id, "/context show \"a\x1b[2K\u202eb\"", acp.StopReasonEndTurn)
		got := h.tc.agentText(id)
		if !strings.HasPrefix(got, `"qkit context show a\x1b\\[2K\u202eb"`) || strings.ContainsAny(got, "\x1b\u202e") {
			t.Errorf("exit %d: the slash command answered %q", code, got)
		}
	}
}
