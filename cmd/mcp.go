//go:build !qkit_lite

package cmd

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/output"
)

func newMCPCmd(a *app.App) *cobra.Command {
	c := withHead("mcp", &cobra.Command{
		Long: `Serve qkit's tools to MCP clients (Claude Code, Gemini CLI, Cursor, Q itself) and inspect them.

Tools: ask_user_questions, internal_command, qkit_help and, when enabled, q-developer-agent
(ENABLE_ADDITIONAL_TOOLS=q-developer-agent, or qkit settings set tools.enabled q-developer-agent).
'qkit mcp tools' lists them with their state.`,
		Example: `  qkit mcp serve
  qkit mcp tools
  qkit mcp tools help q-developer-agent`,
	})
	c.AddCommand(newMCPServeCmd(a), newMCPToolsCmd(a))
	return c
}

// mcpServeOptions are the flags of `qkit mcp serve`.
type mcpServeOptions struct {
	eofGrace time.Duration
}

func newMCPServeCmd(a *app.App) *cobra.Command {
	opts := &mcpServeOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the MCP server on stdin and stdout",
		Long: `Run the MCP server on stdio: JSON-RPC messages, one per line, on stdin and stdout. stdout carries
the protocol only; logs go to stderr (--log-level, or the log.level setting).

The server is named "qkit" and reports qkit's version. Optional tools are listed only when enabled:
set ENABLE_ADDITIONAL_TOOLS=q-developer-agent (or all) in the server's environment, or
qkit settings set tools.enabled q-developer-agent. AGENT_TIMEOUT and AGENT_MAX_RESPONSE_SIZE
limit each agent run.

Started on a terminal, it says on stderr that it waits for a client. The server stops when stdin
ends (that is how MCP clients shut it down), or on SIGTERM or Ctrl-C.
Calls still running at the end of stdin get --eof-grace (10s) to finish. Then they are cancelled:
every process the server started gets SIGTERM at once (SIGKILL half a second later), and a waiting
question set is marked abandoned. SIGTERM and Ctrl-C do the same without the grace. Scripts that
pipe requests in and expect long calls to finish raise it.`,
		Example: `  # Claude Code
  claude mcp add qkit -e ENABLE_ADDITIONAL_TOOLS=q-developer-agent -- qkit mcp serve

  # Any client configured with JSON
  {"mcpServers": {"qkit": {"command": "qkit", "args": ["mcp", "serve"],
                           "env": {"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent"}}}}

  # A script: requests on stdin, answers on stdout; allow the agent call up to 5 minutes
  printf '%s\n' "$INIT" "$INITIALIZED" "$CALL" | qkit mcp serve --eof-grace 5m`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPServe(c.Context(), a, opts) },
	}
	c.Flags().DurationVar(&opts.eofGrace, "eof-grace", mcpserver.DefaultEOFGrace, "`DURATION` calls may run on after stdin ends (0: none)")
	_ = c.RegisterFlagCompletionFunc("eof-grace", cobra.NoFileCompletions)
	return interruptible(c)
}

// runMCPServe is `qkit mcp serve`: the MCP server on the app's stdin and stdout until stdin ends
// or ctx does.
func runMCPServe(ctx context.Context, a *app.App, opts *mcpServeOptions) error {
	// A client that dies closes our stdout and stderr. Go would end the process on its next
	// write there (SIGPIPE), leaving a running agent's process group behind; ignored, the
	// write fails instead and the server cancels its calls and exits cleanly.
	signal.Ignore(syscall.SIGPIPE)
	if opts.eofGrace < 0 {
		return output.UsageErrorf("invalid --eof-grace %v: it must not be negative", opts.eofGrace)
	}
	if a.IO.StdinTTY {
		// A person who typed the command sees that it is waiting, not hung. Clients start it
		// with pipes and never see this.
		a.Errorf("waiting for an MCP client on stdin (JSON-RPC, one message a line); Ctrl-C stops. " +
			"Configure your client to run: qkit mcp serve (e.g. claude mcp add qkit -- qkit mcp serve; see qkit mcp serve --help)")
	}
	return mcpserver.Serve(ctx, mcpDeps(a), &mcpserver.Stdio{In: a.IO.In, Out: a.IO.Out, EOFGrace: opts.eofGrace, Logger: a.Logger,
		AtEOF: stopEverything}) // the grace is over: qkit stops, everything it started at once
}

// mcpDeps is what the MCP tools need of qkit: the app and the internal commands.
func mcpDeps(a *app.App) *mcpserver.Deps {
	return &mcpserver.Deps{App: a, Commands: InternalRegistry(a), QuestionStores: questionStores()}
}

// mcpToolsOptions are the flags of `qkit mcp tools`.
type mcpToolsOptions struct {
	asJSON bool
}

func newMCPToolsCmd(a *app.App) *cobra.Command {
	opts := &mcpToolsOptions{}
	c := &cobra.Command{
		Use:   "tools",
		Short: "List the MCP tools and whether each is enabled",
		Long: `List every MCP tool qkit can serve with its state. Optional tools are served only when enabled
through ENABLE_ADDITIONAL_TOOLS or the tools.enabled setting.

On a terminal this is a table; piped, tab-separated lines (name, state, description); with --json an
array of {name, description, optional, enabled}.`,
		Example: `  qkit mcp tools
  qkit mcp tools --json | jq -r '.[] | select(.enabled) | .name'
  qkit mcp tools help q-developer-agent`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPTools(c.Context(), a, opts) },
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: [{name, description, optional, enabled}]")
	c.AddCommand(newMCPToolsHelpCmd(a))
	return exposeRead(c)
}

// runMCPTools is `qkit mcp tools`: every tool with its state, as a table, lines or JSON.
func runMCPTools(ctx context.Context, a *app.App, opts *mcpToolsOptions) error {
	entries, err := mcpserver.Catalog(ctx, mcpDeps(a))
	if err != nil {
		return err
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, entries)
	}
	rows := make([][]string, len(entries))
	for i, e := range entries {
		state := "enabled"
		if !e.Enabled {
			state = "disabled"
		}
		if e.Optional {
			state += " (optional)"
		}
		desc, _, _ := strings.Cut(e.Description, "\n")
		rows[i] = []string{e.Name, state, desc}
	}
	return printTable(a.IO.Out, a.IO.StdoutTTY, []string{"name", "state", "description"}, rows)
}

func newMCPToolsHelpCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "help <tool>",
		Short: "Print a tool's extended help: examples, common patterns, troubleshooting",
		Long: `Print the extended help of one MCP tool, the same text the qkit_help tool gives a client:
its state, examples with arguments, common patterns and troubleshooting.`,
		Example: `  qkit mcp tools help q-developer-agent`,
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, t := range mcpserver.Registry() {
				names = append(names, t.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error { return runMCPToolsHelp(a, args[0]) },
	}
	return exposeRead(c)
}

// runMCPToolsHelp is `qkit mcp tools help TOOL`: the tool's extended help (exit 4 for no such tool).
func runMCPToolsHelp(a *app.App, tool string) error {
	text, err := mcpserver.HelpText(mcpDeps(a), tool)
	if err != nil {
		return output.NotFoundf("%v", err)
	}
	_, err = fmt.Fprint(a.IO.Out, text)
	return err
}
