//go:build !qkit_lite

package cmd

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/acpserver"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// acpDisabled is the feature-gate message; scripts match it, so its words do not change.
const acpDisabled = "ACP is disabled. Enable it with: qkit settings set acp.enabled true"

// acpMemoryLimit is acp serve's soft memory limit.
const acpMemoryLimit = 64 << 20

func newACPCmd(a *app.App) *cobra.Command {
	c := withHead("acp", &cobra.Command{
		Long: `Serve the Amazon Q Developer CLI to editors (Zed, Neovim, ...) as an Agent Client Protocol agent.

The editor starts 'qkit acp serve' and talks JSON-RPC to it over stdin and stdout.`,
		Example: `  qkit settings set acp.enabled true
  qkit acp serve --agent my-profile`,
		Args: cobra.NoArgs,
	})
	c.AddCommand(newACPServeCmd(a))
	return c
}

// acpServeOptions are the flags of `qkit acp serve`.
type acpServeOptions struct {
	agent string
	model string
}

func newACPServeCmd(a *app.App) *cobra.Command {
	opts := &acpServeOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the ACP agent on stdin and stdout",
		Long: `Run qkit as an Agent Client Protocol (version 1) agent on stdin and stdout, for an editor to start.

Each ACP session is kept in <data>/qkit.db with its transcript, so an editor can list, load and
resume sessions after a restart. Stdout carries the protocol only; logs go to stderr. Requires the
setting acp.enabled (a feature gate).

With agent.backend acp, or auto and an agent that speaks ACP (kiro-cli), qkit is a proxy to one
'<agent.command> acp'. The editor sees the agent's tool calls, diffs and plans and answers its
permission and file requests; its stdio MCP servers reach the agent through qkit. qkit adds its
slash commands, your context files (with a session's first prompt), the session list and the
model option. Otherwise (agent.backend chat, or q 1.19.7) each prompt runs the agent CLI's chat
with the session's earlier turns and your context files prepended.

The server stops when stdin ends. Requests still being answered get up to 5s to finish, so
requests piped in from a script are answered (cat requests.jsonl | qkit acp serve). Running
prompts are cancelled at once. Every process the server started (the agent, its terminals,
bridged MCP servers) gets SIGTERM, then SIGKILL half a second later; SIGTERM and Ctrl-C do the
same. A script that wants a prompt's reply keeps stdin open until the prompt's answer arrives.

A JSON-RPC line may be up to 10 MiB; a longer one, or one that is not valid JSON-RPC, is answered
with a JSON-RPC error (-32700 parse error, -32600 invalid request) and the session carries on.`,
		Example: `  # Enable the feature once
  qkit settings set acp.enabled true

  # Zed: settings.json
  #   "agent_servers": { "Q": { "command": "qkit", "args": ["acp", "serve"] } }

  # Use an agent profile and a model for every session
  qkit acp serve --agent my-profile --model claude-sonnet-4`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runACPServe(c.Context(), a, opts) },
	}
	c.Flags().StringVar(&opts.agent, "agent", "", "q agent profile (`NAME`) to run every prompt with")
	c.Flags().StringVar(&opts.model, "model", "", "default `MODEL` of new sessions (default: setting agent.model)")
	_ = c.RegisterFlagCompletionFunc("agent", cobra.NoFileCompletions)
	_ = c.RegisterFlagCompletionFunc("model", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return askModels(c.Context(), a), cobra.ShellCompDirectiveNoFileComp
	})
	return interruptible(c)
}

// runACPServe is `qkit acp serve`: the ACP agent on the app's stdin and stdout until stdin ends or
// ctx does.
func runACPServe(ctx context.Context, a *app.App, opts *acpServeOptions) error {
	if !config.ACPEnabled.Get(a.Config) {
		return output.Errorf(output.ExitFailure, "%s", acpDisabled)
	}
	model := opts.model
	if model == "" {
		model = config.AgentModel.Get(a.Config)
	}
	limits := agent.LimitsFromConfig(a.Config)
	cache := agent.NewModelCache(a.Config.Paths.State)
	if model != "" {
		// A default model is checked before any protocol: one the agent does not take is a
		// usage error. (The list is cached; the sessions' model option reads it again below.)
		choices, from := cache.Choices(ctx, limits)
		if ctx.Err() != nil {
			return nil // interrupted while the agent listed its models: exit 130, as a server stopped so
		}
		if err := agent.CheckChoice(limits.Command, model, choices, from); err != nil {
			return output.WithCode(output.ExitUsage, err)
		}
	}
	// The sessions' model option: the agent's list may take a while (chat --list-models asks the
	// service), so it is fetched while the editor is already answered.
	loadModels := func(ctx context.Context) []string { return agent.OfferedModels(cache.Choices(ctx, limits)) }
	if strings.HasPrefix(opts.agent, "-") {
		return output.UsageErrorf("invalid --agent %q: a name cannot start with \"-\"", opts.agent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		// A soft limit for a server that may stream fifty replies at once: the GC works harder
		// near it instead of letting the heap double (GOMEMLIMIT overrides it).
		debug.SetMemoryLimit(acpMemoryLimit)
	}
	// An editor that dies closes our stdout; the next write there would kill qkit with SIGPIPE
	// and leave a running agent's process group behind. Ignored, the write fails, the connection
	// ends and every turn is cancelled.
	signal.Ignore(syscall.SIGPIPE)
	store, err := sessions.Open(ctx, filepath.Join(a.Config.Paths.Data, "qkit.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	files := newContextStore(a.Config)
	profile, err := files.ResolveProfile(a.ProfileFlag)
	if err != nil {
		return err
	}
	limits.Logger = a.Logger
	backend := config.AgentBackend.Get(a.Config)
	if backend == acpclient.BackendAuto {
		// Learned once per agent binary (ask keeps the same file); an agent that does not speak
		// ACP gets the text path.
		choice, err := acpclient.ChooseBackend(ctx, backend, limits.Command, acpclient.BackendCacheFile(a.Config.Paths.State), false, a.Logger)
		if err != nil {
			return err
		}
		backend = choice.Backend
		a.Logger.Info("agent backend", "backend", backend, "reason", choice.Reason)
	}
	return acpserver.Serve(ctx, acpserver.Options{
		Store:      store,
		Backend:    backend,
		Limits:     limits,
		Commands:   InternalRegistry(a),
		Login:      terminalLogin(a),
		Agent:      opts.agent,
		Model:      model,
		LoadModels: loadModels,
		MaxTokens:  int(config.ContextMaxTokens.Get(a.Config)),
		Context: func(cwd string, maxTokens int, prompt string) (string, []string, error) {
			return files.Prompt(profile, cwd, int64(maxTokens), prompt)
		},
		Logger:  a.Logger,
		Version: a.Version.Version,
		Now:     a.Now,
		AtEOF:   stopEverything, // the editor closing stdin stops qkit: everything goes at once
	}, a.IO.In, a.IO.Out)
}

// terminalLogin is the login an editor runs in a terminal for acp serve: this binary again, with
// the global flags acp serve was given (the same config file and --set values, so the same agent
// is logged in), then doctor --login.
func terminalLogin(a *app.App) *acpserver.TerminalLogin {
	self, err := os.Executable()
	if err != nil {
		self = "qkit"
	}
	return &acpserver.TerminalLogin{Args: append(globalArgs(a), "doctor", "--login"), Command: self}
}
