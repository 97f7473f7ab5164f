package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/commands"
)

// slashCommand returns the command line of a prompt such as "/context show" when its first word is
// one of the registry's commands. Any other prompt, "/usr/lib is slow" included, goes to q.
func (a *adapter) slashCommand(prompt string) (string, bool) {
	reg := a.opts.Commands
	p := strings.TrimSpace(prompt)
	if reg == nil || !strings.HasPrefix(p, "/") {
		return "", false
	}
	line := strings.TrimSpace(p[1:])
	first, _, _ := strings.Cut(line, " ")
	if first == "" || !(first == commands.HelpName || slices.Contains(reg.TopLevel(), first)) {
		return "", false
	}
	return line, true
}

// availableCommands lists the registry's runnable commands as the client shows them after "/".
func (a *adapter) availableCommands() []acp.AvailableCommand {
	out := []acp.AvailableCommand{}
	for _, e := range a.opts.Commands.Runnable() {
		c := acp.AvailableCommand{Name: e.Name, Description: e.Short}
		if hint := strings.TrimSpace(strings.TrimPrefix(e.Usage, e.Name)); hint != "" && hint != e.Usage {
			c.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: hint}}
		}
		out = append(out, c)
	}
	return out
}

// announceCommands sends available_commands_update once the response for session id is out:
// editors drop updates for a session they have not heard of yet.
func (a *adapter) announceCommands(id string) {
	if a.opts.Commands == nil {
		return
	}
	cmds := a.availableCommands()
	key, _ := json.Marshal(id)
	a.pipe.AfterResponse(`"sessionId":`+string(key), func() {
		a.update(id, acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}})
	})
}

// runCommand runs a slash command through the internal-command registry and answers with its
// output as an agent message. A command that changes state asks first with
// session/request_permission.
func (a *adapter) runCommand(ctx context.Context, in turnInput, line string, say func(string)) turnResult {
	reg := a.opts.Commands
	req, err := reg.ParseLine(line)
	if err != nil {
		say(err.Error() + "\n")
		return turnResult{stop: acp.StopReasonEndTurn}
	}
	call, err := reg.Prepare(req)
	if err != nil {
		say(err.Error() + "\n")
		return turnResult{stop: acp.StopReasonEndTurn}
	}
	res, err := reg.Run(ctx, call, commands.RunOptions{
		Source: commands.SourceACP,
		Dir:    in.cwd,
		Confirm: func(ctx context.Context, c *commands.Call) (bool, error) {
			ok, gone, err := a.confirm(ctx, in.sessionID, c)
			if gone {
				// session/cancel or a "cancelled" outcome: the core audits it as interrupted, as
				// the CLI's Ctrl-C and MCP's cancelled form are.
				return false, commands.ErrInterrupted
			}
			return ok, err
		},
	})
	switch {
	case errors.Is(err, commands.ErrInterrupted) || ctx.Err() != nil:
		return turnResult{stop: acp.StopReasonCancelled}
	case errors.Is(err, commands.ErrDeclined):
		say(commands.DeclinedMessage(call))
		return turnResult{stop: acp.StopReasonEndTurn}
	case err != nil:
		say(err.Error() + "\n")
		return turnResult{stop: acp.StopReasonEndTurn}
	}
	say(res.Message())
	return turnResult{stop: acp.StopReasonEndTurn}
}

// confirm asks the client whether a state-changing command may run. gone reports a cancelled
// request (session/cancel, or the client answered "cancelled").
func (a *adapter) confirm(ctx context.Context, sessionID string, c *commands.Call) (ok, gone bool, err error) {
	id := acp.ToolCallId("qkit-command-" + uuid.NewString())
	title := fmt.Sprintf("Run %s (%s)?", c.Display(), c.Entry.Short)
	kind := acp.ToolKindEdit
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(sessionID),
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind,
			Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: map[string]any{"command": c.CommandLine}},
		Options: []acp.PermissionOption{
			{OptionId: optAllowOnce, Name: "Run it", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optRejectOnce, Name: "Don't run it", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	switch {
	case ctx.Err() != nil:
		return false, true, nil
	case err != nil:
		return false, false, fmt.Errorf("asking the user to confirm %s: %w", c.Display(), err)
	case resp.Outcome.Selected == nil:
		return false, true, nil
	}
	return resp.Outcome.Selected.OptionId == optAllowOnce, false, nil
}
