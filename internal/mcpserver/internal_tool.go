package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/commands"
)

// internalCommandInput is the tool's request, {command, subcommand, args, flags}.
type internalCommandInput struct {
	Command    string            `json:"command"`
	Subcommand string            `json:"subcommand,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Flags      map[string]string `json:"flags,omitempty"`
}

// confirmInput is the id of the confirmation the tool asks for through multi-round-trip elicitation.
const confirmInput = "confirm"

// internalCommandSchema is written out rather than inferred: inferred slices become
// ["null","array"], which some clients reject.
var internalCommandSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"command": map[string]any{
			"type":        "string",
			"description": "The command to run, without a leading slash (e.g. \"context\", \"settings\", \"version\", \"help\").",
		},
		"subcommand": map[string]any{
			"type":        "string",
			"description": "The subcommand, for commands that have them (e.g. \"add\", \"show\", \"list\").",
		},
		"args": map[string]any{
			"type":        "array",
			"items":       map[string]any{"type": "string"},
			"description": "Positional arguments, passed to the command as they are (never through a shell).",
		},
		"flags": map[string]any{
			"type":                 "object",
			"additionalProperties": map[string]any{"type": "string"},
			"description":          "Flags by name without dashes. An empty value gives the flag bare: {\"global\": \"\"} is --global; otherwise --name=value.",
		},
	},
	"required":             []any{"command"},
	"additionalProperties": false,
}

const internalCommandHelp = `internal_command runs one of qkit's own commands for the user, as they would type it after "qkit".

Examples
  "Add this file to my context"     {"command": "context", "subcommand": "add", "args": ["file.txt"]}
  "What is in my context?"          {"command": "context", "subcommand": "show"}
  "Use kiro-cli instead of q"       {"command": "settings", "subcommand": "set", "args": ["agent.command", "kiro-cli"]}
  "How do I use context add?"       {"command": "help", "subcommand": "context", "args": ["add"]}
  The full list, with usage and whether each command changes state: {"command": "help"}.

Confirmation
  Commands that only read run at once. Commands that change state ask the user first through MCP
  elicitation. When the client cannot ask (it does not declare elicitation), the call fails with a
  message naming the command; the user can run it themselves (qkit exec internal ...) or allow it
  without asking: qkit settings set internal.trusted "context add" (a group such as "context" trusts
  all its subcommands).

Troubleshooting
  "Unknown command: X"          X is not a command assistants may run; the message lists those that are.
  "... declined to run ..."     the user said no; do not retry unasked.
  "... was cancelled ..."       the user dismissed the question without answering; do not retry unasked.
  "... exited N"                the command ran and failed; its error text follows.
  Output is capped at agent.max_response_size with a truncation notice. Every run is written to
  <state>/audit.log.`

func internalCommandTool() Tool {
	return Tool{
		Name: "internal_command",
		Help: internalCommandHelp,
		Add: func(s *mcp.Server, d *Deps) {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			description := commands.Summary
			if d.Commands != nil {
				description = d.Commands.Describe()
			}
			mcp.AddTool(s, &mcp.Tool{
				Name:        "internal_command",
				Title:       "Run a qkit command",
				Description: description,
				InputSchema: internalCommandSchema,
				Annotations: &mcp.ToolAnnotations{
					Title: "Run a qkit command", ReadOnlyHint: false, IdempotentHint: false,
					DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false),
				},
			}, internalCommandHandler(d, key))
		},
	}
}

func boolPtr(b bool) *bool { return &b }

func internalCommandHandler(d *Deps, key []byte) mcp.ToolHandlerFor[internalCommandInput, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in internalCommandInput) (*mcp.CallToolResult, any, error) {
		reg := d.Commands
		if reg == nil {
			return ErrorResult("internal_command is not available in this server"), nil, nil
		}
		call, err := reg.Prepare(commands.Request{Command: in.Command, Subcommand: in.Subcommand, Args: in.Args, Flags: in.Flags})
		if err != nil {
			return ErrorResult(err.Error()), nil, nil
		}
		opts := commands.RunOptions{Source: commands.SourceMCP}
		if call.NeedsConfirmation {
			state := confirmState(key, call)
			answer, answered := confirmation(req, state)
			switch {
			case answered:
				opts.Confirm = func(context.Context, *commands.Call) (bool, error) {
					if answer == "cancel" {
						// Dismissed without an answer: the core audits it as interrupted, as the
						// CLI's Ctrl-C and ACP's session/cancel are.
						return false, commands.ErrInterrupted
					}
					return answer == "accept", nil
				}
			case canElicit(req):
				// Multi-round-trip: the SDK asks the client itself for clients before 2026-07-28 and
				// calls this handler again with the answer; newer clients answer and call again.
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{confirmInput: &mcp.ElicitParams{
						Mode:            "form",
						Message:         fmt.Sprintf("An assistant wants to run %s (%s). Allow it?", call.Display(), call.Entry.Short),
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
					}},
					RequestState: state,
				}, nil, nil
			default:
				return ErrorResult(noConfirmationMessage(call)), nil, nil
			}
		}
		res, err := reg.Run(ctx, call, opts)
		if errors.Is(err, commands.ErrDeclined) {
			return ErrorResult(commands.DeclinedMessage(call)), nil, nil
		}
		if errors.Is(err, commands.ErrInterrupted) {
			return ErrorResult(commands.InterruptedMessage(call)), nil, nil
		}
		if err != nil {
			return ErrorResult(err.Error()), nil, nil
		}
		text := res.Message()
		if res.ExitCode != 0 {
			return ErrorResult(text), nil, nil
		}
		return TextResult(text), nil, nil
	}
}

// confirmState binds a confirmation to this server and this exact command line, so an answer can
// only confirm the call it was asked for.
func confirmState(key []byte, call *commands.Call) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(call.CommandLine))
	return hex.EncodeToString(m.Sum(nil))
}

// confirmation returns the user's answer (the elicitation's action: accept, decline or cancel)
// when this call carries one for state.
func confirmation(req *mcp.CallToolRequest, state string) (action string, answered bool) {
	if req.Params == nil || req.Params.InputResponses == nil || !hmac.Equal([]byte(req.Params.RequestState), []byte(state)) {
		return "", false
	}
	r, ok := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if !ok || r == nil {
		return "", false
	}
	return r.Action, true
}

// canElicit reports whether the client declared form elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

func noConfirmationMessage(call *commands.Call) string {
	if call.Guarded {
		return fmt.Sprintf("%s changes state and needs the user's confirmation, but this MCP client cannot ask "+
			"the user (it does not support elicitation), and %s",
			call.Display(), commands.HowToConfirm(call))
	}
	return fmt.Sprintf("%s changes state and needs the user's confirmation, but this MCP client cannot ask "+
		"the user (it does not support elicitation). Tell the user the command so they can run it "+
		"themselves, or they can allow it without asking: qkit settings set internal.trusted %q",
		call.Display(), call.Entry.Name)
}
