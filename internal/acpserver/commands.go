package acpserver

import (
	"context"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Command is one slash command as advertised to the client.
type Command struct {
	Name        string // e.g. "context show"
	Description string
	Hint        string // what goes after the name, empty when nothing does
}

// Commands is the internal-command registry as slash commands use it.
type Commands interface {
	// List returns the commands to advertise.
	List() []Command
	// Run runs line (a command and its arguments, without the slash) in dir and returns what it
	// printed. confirm is asked before a command that changes state.
	Run(ctx context.Context, dir, line string, confirm func(ctx context.Context, question string) (bool, error)) (string, error)
}

// slashCommand returns the command line of a prompt that starts with "/".
func slashCommand(prompt string) (string, bool) {
	p := strings.TrimSpace(prompt)
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "", false
	}
	return strings.TrimSpace(p[1:]), true
}

// announceCommands sends available_commands_update once the response for session id is out.
func (a *adapter) announceCommands(id string) {
	if a.opts.Commands == nil {
		return
	}
	var cmds []acp.AvailableCommand
	for _, c := range a.opts.Commands.List() {
		ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.Hint}}
		}
		cmds = append(cmds, ac)
	}
	a.watch.afterResponse(id, func() {
		a.update(id, acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}})
	})
}

// runCommand runs a slash command through the registry and answers with its output; a command that
// changes state asks first with session/request_permission.
func (a *adapter) runCommand(ctx context.Context, in turnInput, line string, say func(string)) turnResult {
	confirm := func(ctx context.Context, question string) (bool, error) {
		return a.confirm(ctx, in.sessionID, line, question)
	}
	out, err := a.opts.Commands.Run(ctx, in.cwd, line, confirm)
	if ctx.Err() != nil {
		return turnResult{stop: acp.StopReasonCancelled}
	}
	say(out)
	if err != nil {
		if out != "" && !strings.HasSuffix(out, "\n") {
			say("\n")
		}
		say("/" + line + ": " + err.Error() + "\n")
	}
	return turnResult{stop: acp.StopReasonEndTurn}
}

// confirm asks the client whether a state-changing command may run.
func (a *adapter) confirm(ctx context.Context, sessionID, line, question string) (bool, error) {
	id := acp.ToolCallId("qkit-command-" + strings.ReplaceAll(line, " ", "-"))
	title := "/" + line
	if question != "" {
		title = question
	}
	kind := acp.ToolKindEdit
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(sessionID),
		ToolCall:  acp.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind, Status: acp.Ptr(acp.ToolCallStatusPending)},
		Options: []acp.PermissionOption{
			{OptionId: optAllowOnce, Name: "Run it", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optRejectOnce, Name: "Don't run it", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return false, err
	}
	return resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == optAllowOnce, nil
}
