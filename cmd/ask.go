package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/kballard/go-shellquote"
	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// askOptions are the flags of `qkit ask`.
type askOptions struct {
	resume     bool
	agentName  string
	model      string
	trustAll   bool
	trustTools []string
	verbose    bool
	timeout    string
	maxSize    string
	noContext  bool
	dryRun     bool
	asJSON     bool
	events     askEventOptions      // ask_events.go: --output-format, permissions, the ACP backend
	structured askStructuredOptions // ask_structured.go: --schema, budgets, -o
	listModels bool
	retriesSet bool // --schema-retries was given (its default is not zero)
}

func newAskCmd(a *app.App) *cobra.Command {
	opts := &askOptions{}
	c := &cobra.Command{
		Use:   "ask [PROMPT | -]",
		Short: "Send one prompt to Q (q chat --no-interactive) and print the reply",
		Long: `Send one prompt to the agent CLI (agent.command: q or kiro-cli) and print its reply as it
arrives. The prompt is the argument, or stdin with - (or when stdin is not a terminal); the active
context profile's files go in front of it. The reply is filtered for the terminal and capped.

More in qkit help <topic>:
  agent-runs         limits, long prompts, the reply, failures, models, --json, --dry-run
  acp-backend        backends, stream-json, sessions
  permissions        which tools, files and commands the agent may use, and who is asked
  structured-output  --schema, --max-turns, --max-credits, -o
  exit-codes         0 ok, 1 the agent failed, 2 bad usage, 4 not found, 5 no valid answer,
                     6 budget spent, 124 timed out, 130 interrupted`,
		Example: `  qkit ask "Summarise the open TODOs in this repository"
  git diff | qkit ask -
  qkit ask --json --timeout 60s "Explain main.go" | jq -r .output
  qkit ask --resume --yolo "Apply the first fix"
  qkit ask --trust-tools read --deny-tools shell,write --on-permission deny "Review the diff"
  qkit ask --on-permission ask "Fix the failing test"   # approve in: qkit questions wait
  qkit ask --output-format stream-json "Summarise README.md" | jq -c 'select(.type=="tool_call")'
  qkit ask --schema findings.schema.json -o findings.json "List the TODOs as findings"`,
		GroupID: groupCore,
		Args:    cobra.MaximumNArgs(1),
		// The prompt is free text: offer only "-" (stdin), never file names.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return []string{"-\tread the prompt from stdin"}, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.events.formatSet = c.Flags().Changed("output-format")
			opts.retriesSet = c.Flags().Changed("schema-retries")
			return runAsk(c.Context(), a, opts, args)
		},
	}
	f := c.Flags()
	f.BoolVar(&opts.resume, "resume", false, "continue the conversation saved for this directory (--resume)")
	f.StringVar(&opts.agentName, "agent", "", "q's agent configuration `NAME` (--agent), not a qkit --profile")
	f.StringVar(&opts.model, "model", "", "`MODEL` to use (--model), as --list-models (default: agent.model)")
	f.BoolVar(&opts.listModels, "list-models", false, "print the models --model takes, and exit (with --json: one object)")
	f.BoolVar(&opts.trustAll, "yolo", false, "trust every tool without asking (--trust-all-tools)")
	f.BoolVar(&opts.trustAll, "trust-all-tools", false, "same as --yolo")
	f.StringSliceVar(&opts.trustTools, "trust-tools", nil, "trust these `TOOLS` (a,b); an MCP tool as @server/tool or @server")
	f.BoolVar(&opts.verbose, "verbose", false, "ask the agent for its logs (q prints them with the reply)")
	f.StringVar(&opts.timeout, "timeout", "", "stop the run after `DURATION` (90s, 3m; default: agent.timeout)")
	f.StringVar(&opts.maxSize, "max-response-size", "", "cap the reply at `SIZE` (512KB; default: agent.max_response_size)")
	f.BoolVar(&opts.noContext, "no-context", false, "do not prepend the context files")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the command line and the full prompt; run nothing")
	f.BoolVar(&opts.asJSON, "json", false, "print one JSON object at the end (as --output-format json)")
	addAskEventFlags(c, &opts.events)
	addAskStructuredFlags(c, &opts.structured)
	_ = c.RegisterFlagCompletionFunc("model", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return askModels(c.Context(), a), cobra.ShellCompDirectiveNoFileComp
	})
	for _, name := range []string{"agent", "timeout", "max-response-size"} {
		_ = c.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	_ = c.RegisterFlagCompletionFunc("deny-tools", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return askToolNames(a, approval.DenyNames), cobra.ShellCompDirectiveNoFileComp
	})
	_ = c.RegisterFlagCompletionFunc("session", func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return askSessions(c.Context(), a, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = c.RegisterFlagCompletionFunc("trust-tools", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return askToolNames(a, approval.ToolNames), cobra.ShellCompDirectiveNoFileComp
	})
	// The light build hands these to qkit-full: --schema needs the JSON Schema validator,
	// --session the session store (forward.go).
	return opensQuestionStore(fullFlags(interruptible(c), "schema,session"))
}

// askConfig returns the configuration: completion runs before it is loaded, so it is loaded here
// then.
func askConfig(a *app.App) *config.Config {
	if a.Config != nil {
		return a.Config
	}
	c, _ := config.Load(config.LoadOptions{})
	return c
}

// askModels returns the models --model completes to: the agent.models setting when set, else the
// agent's own list (cached), else q's offline list. Listing stops when ctx ends (a signal: see
// catchInterrupts).
func askModels(ctx context.Context, a *app.App) []string {
	c := askConfig(a)
	if c == nil {
		return slices.Clone(agent.FallbackModels)
	}
	return agent.OfferedModels(agent.NewModelCache(c.Paths.State).Choices(ctx, agent.LimitsFromConfig(c)))
}

// askToolNames are the agent's tool names, for --trust-tools and --deny-tools completion.
func askToolNames(a *app.App, names func(command string) []string) []string {
	c := askConfig(a)
	if c == nil {
		return names("")
	}
	return names(config.AgentCommand.Get(c))
}

// askSessions are what --session completes to: the sessions qkit stored for this folder, the
// ids sessions list --cwd . shows and the only ones --session goes on with here (a session of
// another folder is refused), newest first, each described by its title. Not the agent's own ids
// (acp-sessions.json, for --resume): those are the agent's text, and each ACP run's session is
// stored under a qkit id anyway.
func askSessions(ctx context.Context, a *app.App, toComplete string) []string {
	c := askConfig(a)
	if c == nil {
		return nil
	}
	here, err := a.WorkingDir()
	if err != nil {
		return nil
	}
	return sessionCompletions(ctx, c.Paths.Data, here, toComplete)
}

// modelsJSON is ask --list-models --json.
type modelsJSON struct {
	Models  []agent.Model `json:"models"`
	Default string        `json:"default"`
	// Source says where the list comes from: "setting" (agent.models), "agent" (its
	// --list-models), or "none" (the agent cannot list: any model is passed to it).
	Source string `json:"source"`
}

func listAskModels(ctx context.Context, a *app.App, asJSON bool) error {
	l := agent.LimitsFromConfig(a.Config)
	list, from, err := agent.NewModelCache(a.Config.Paths.State).FreshChoices(ctx, l)
	if err != nil && ctx.Err() != nil { // stopped by a signal (the cause) or the caller
		return askrun.Interrupted()
	}
	if err != nil {
		return output.Errorf(output.ExitFailure, "listing the agent's models: %v", err)
	}
	v := modelsJSON{Models: []agent.Model{}, Default: l.DefaultModel, Source: "none"}
	if from != agent.ModelsFromNone {
		v.Source, v.Models = from, list.Models
	}
	if from == agent.ModelsFromAgent && v.Default == "" {
		v.Default = list.Default
	}
	if asJSON {
		return output.JSON(a.IO.Out, v)
	}
	if v.Source == "none" {
		a.Warnf("%s cannot list its models (no chat --list-models): any model name is passed to it; "+
			"set agent.models to check names before running", filepath.Base(l.Command))
		return nil
	}
	for _, m := range v.Models {
		line := m.ID
		if m.ID == v.Default {
			line += " (default)"
		}
		if m.Description != "" {
			line += "\t" + m.Description
		}
		if _, err := fmt.Fprintln(a.IO.Out, line); err != nil {
			return err
		}
	}
	return nil
}

// checkListModelsFlags refuses what --list-models has no use for, since it runs no prompt: the
// flags of a run, and stream-json. --output-format json (or --json) prints the list as one object.
func checkListModelsFlags(opts *askOptions) error {
	o := &opts.events
	var given []string
	for _, f := range []struct {
		set  bool
		name string
	}{
		{opts.resume, "resume"}, {o.session != "", "session"}, {opts.agentName != "", "agent"}, {opts.model != "", "model"},
		{opts.trustAll, "yolo"}, {len(opts.trustTools) > 0, "trust-tools"}, {len(o.denyTools) > 0, "deny-tools"},
		{o.onPermission != "", "on-permission"}, {opts.verbose, "verbose"}, {opts.timeout != "", "timeout"},
		{opts.maxSize != "", "max-response-size"}, {opts.noContext, "no-context"}, {opts.dryRun, "dry-run"},
		{o.backend != "", "backend"}, {o.refreshBackend, "refresh-backend"},
		{opts.structured.outputFile != "", "output-file"}, {opts.structured.schemaArg != "", "schema"},
		{opts.retriesSet, "schema-retries"}, {opts.structured.maxTurns != 0, "max-turns"},
		{opts.structured.maxCredits != 0, "max-credits"},
	} {
		if f.set {
			given = append(given, "--"+f.name)
		}
	}
	switch len(given) {
	case 0:
	case 1:
		return output.UsageErrorf("--list-models runs no prompt, so %s has no use with it: leave it out", given[0])
	default:
		return output.UsageErrorf("--list-models runs no prompt, so %s have no use with it: leave them out", strings.Join(given, ", "))
	}
	if o.outputFormat == formatStreamJSON {
		return output.UsageErrorf("--list-models prints one list, not events: --output-format stream-json has nothing to stream; use --output-format json (or --json)")
	}
	return checkAskEventFlags(opts)
}

// askJSON is what the --json object says of the run on every backend (askEventsJSON adds the rest).
type askJSON struct {
	Output       string `json:"output"`
	Truncated    bool   `json:"truncated"`
	OriginalSize int64  `json:"original_size"`
	TimedOut     bool   `json:"timed_out"`
	ExitCode     int    `json:"exit_code"`
	DurationMS   int64  `json:"duration_ms"`
	Stderr       string `json:"stderr"`
}

// dryRunJSON is the --dry-run --json object.
type dryRunJSON struct {
	Argv   []string `json:"argv"`
	Prompt string   `json:"prompt"`
	// PromptOnStdin is set when the prompt is too long for one argument and goes on stdin.
	PromptOnStdin bool `json:"prompt_on_stdin"`
}

// runAsk is `qkit ask`: ctx ends the run (Ctrl-C, a signal), args is the prompt or "-".
func runAsk(ctx context.Context, a *app.App, opts *askOptions, args []string) error {
	if opts.listModels {
		if len(args) > 0 {
			return output.UsageErrorf("--list-models takes no prompt")
		}
		if err := checkListModelsFlags(opts); err != nil {
			return err
		}
		return listAskModels(ctx, a, opts.asJSON)
	}
	if err := checkAskEventFlags(opts); err != nil {
		return err
	}
	if err := checkAskStructured(a, &opts.structured, args); err != nil {
		return err
	}
	prompt, err := readPrompt(a, args)
	if err != nil {
		return err
	}
	o, err := askRunOptions(a, opts, prompt)
	if err != nil {
		return err
	}
	if opts.dryRun {
		o.Structured = askStructured(a, &opts.structured, nil)
		plan, err := askrun.DryRun(o)
		if err != nil {
			return err
		}
		return printDryRun(a, opts, plan)
	}
	// A reader that goes away (qkit ask ... | head) would otherwise kill qkit with SIGPIPE and leave
	// the agent's process group running; instead the failed write stops the run.
	signal.Ignore(syscall.SIGPIPE)
	return runAskEvents(ctx, a, opts, o)
}

// askRunOptions turns the flags into the run's options: the limits (--timeout,
// --max-response-size read as the settings they stand in for), the request with the context
// files in front of the prompt, the backend and the permission policy.
func askRunOptions(a *app.App, opts *askOptions, prompt string) (askrun.Options, error) {
	l := agent.LimitsFromConfig(a.Config)
	var err error
	if opts.timeout != "" {
		if l.Timeout, err = config.AgentTimeout.Parse(opts.timeout); err != nil {
			return askrun.Options{}, output.UsageErrorf("invalid --timeout: %v", err)
		}
	}
	if opts.maxSize != "" {
		if l.MaxResponseSize, err = config.AgentMaxResponseSize.Parse(opts.maxSize); err != nil {
			return askrun.Options{}, output.UsageErrorf("invalid --max-response-size: %v", err)
		}
	}
	l.Logger = slog.New(belowWarn{a.Logger.Handler()})
	dir, err := a.WorkingDir()
	if err != nil {
		return askrun.Options{}, err
	}
	r := agent.Request{Prompt: prompt, Resume: opts.resume, Agent: opts.agentName, Model: opts.model, Verbose: opts.verbose, Dir: dir}
	if err := askrun.Validate(l, r); err != nil {
		if errors.Is(err, agent.ErrEmptyPrompt) {
			return askrun.Options{}, output.UsageErrorf("%v: give it as an argument, or - to read it from stdin", agent.ErrEmptyPrompt)
		}
		return askrun.Options{}, err
	}
	if r.Prompt, err = askContext(a, opts, prompt); err != nil {
		return askrun.Options{}, err
	}
	backend := opts.events.backend
	if backend == "" {
		backend = config.AgentBackend.Get(a.Config)
	}
	return askrun.Options{
		Limits: l, Request: r, Backend: backend, RefreshBackend: opts.events.refreshBackend, StateDir: a.Config.Paths.State,
		SessionID: opts.events.session, CheckModel: true, ClientVersion: a.Version.Version, OnWarning: func(w string) { a.Warnf("%s", w) },
		Policy: &approval.Policy{TrustAll: opts.trustAll, Trust: opts.trustTools, Deny: opts.events.denyTools, OnPermission: opts.events.onPermission},
		OnACP:  func(p *approval.Policy) error { return askAsker(a, p) },
		// qkit sessions: --session may name a stored session (its folder checked, its history
		// replayed when the agent has none); the turn is recorded under origin ask.
		Sessions: &askrun.Sessions{Store: sessionStore(a), Origin: sessionrec.OriginAsk, Prompt: prompt, Name: "--session",
			HistoryBytes: sessionrec.HistoryBytes(int(config.ContextMaxTokens.Get(a.Config))), Now: a.Now},
	}, nil
}

// askContext puts the active profile's context files in front of the prompt (not with --no-context).
func askContext(a *app.App, opts *askOptions, prompt string) (string, error) {
	if opts.noContext {
		return prompt, nil
	}
	env, err := loadContextEnv(a)
	if err != nil {
		return "", err
	}
	full, warnings, err := env.store.Prompt(env.profile, env.cwd, config.ContextMaxTokens.Get(a.Config), prompt)
	if err != nil {
		return "", err
	}
	fmt.Fprint(a.IO.ErrOut, contextfiles.Notice(warnings)) // in the words acp serve tells an editor
	return full, nil
}

// readPrompt takes the prompt from the argument, or from stdin for "-" or when there is no
// argument and stdin is not a terminal (without its final line break).
func readPrompt(a *app.App, args []string) (string, error) {
	if len(args) == 1 && args[0] != "-" {
		return args[0], nil
	}
	if len(args) == 0 && a.IO.StdinTTY {
		return "", output.UsageErrorf("%v: give it as an argument, or - to read it from stdin", agent.ErrEmptyPrompt)
	}
	data, err := io.ReadAll(a.IO.In)
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	prompt := strings.TrimRight(string(data), "\r\n") // as q does with a prompt on stdin
	if strings.TrimSpace(prompt) == "" {
		return "", output.UsageErrorf("%v: stdin was empty (the prompt was to be read from it); pipe the prompt in, or give it as an argument", agent.ErrEmptyPrompt)
	}
	return prompt, nil
}

// printDryRun prints what the run would start: the command line and the full prompt (on ACP it
// goes in session/prompt).
func printDryRun(a *app.App, opts *askOptions, p askrun.Plan) error {
	if opts.asJSON {
		return output.JSON(a.IO.Out, dryRunJSON{Argv: p.Argv, Prompt: p.Prompt, PromptOnStdin: p.PromptOnStdin})
	}
	line := shellquote.Join(p.Argv[:len(p.Argv)-1]...) + " <prompt>"
	switch {
	case p.Backend == acpclient.BackendACP:
		line = shellquote.Join(p.Argv...) + "   (the prompt goes in session/prompt)"
	case p.PromptOnStdin:
		line = shellquote.Join(p.Argv...) + " < prompt (on stdin: too long for one argument, or -h/--help, which q would answer with its help)"
	}
	// The prompt holds the context files: shown through the filter on a terminal, exact when piped.
	_, err := fmt.Fprintf(a.IO.Out, "%s\n\n%s\n", onScreen(a, line), onScreen(a, strings.TrimRight(p.Prompt, "\n")))
	return err
}

// belowWarn passes the runner's debug and info lines (--log-level) and drops its warnings and
// errors: ask reports truncation, timeouts and failures itself, once, as "qkit: ..." lines.
type belowWarn struct{ slog.Handler }

func (h belowWarn) Enabled(ctx context.Context, l slog.Level) bool {
	return l < slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h belowWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return belowWarn{h.Handler.WithAttrs(attrs)}
}

func (h belowWarn) WithGroup(name string) slog.Handler { return belowWarn{h.Handler.WithGroup(name)} }

// streamOut writes the reply as it arrives. Near the size limit it holds back the last bytes
// (output.Live), since the cut is known only once more arrives; finish writes the rest of the kept
// reply, so stdout gets exactly the kept reply.
type streamOut struct {
	w    io.Writer
	live output.Live
	err  error  // the first failed write (the reader went away)
	stop func() // stops the run after a failed write
}

func newStreamOut(w io.Writer, limit int64, stop func()) *streamOut {
	return &streamOut{w: w, live: output.NewLive(limit), stop: stop}
}

func (s *streamOut) chunk(b []byte) {
	b = b[:s.live.ShowBytes(b)]
	if len(b) == 0 || s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		s.stop()
	}
}

// finish writes the rest of the kept reply, and a final line break when newline is set and the
// reply lacks one.
func (s *streamOut) finish(body string, newline bool) {
	if rest := s.live.Rest(body); rest != "" {
		_, _ = io.WriteString(s.w, rest)
	}
	if newline && body != "" && !strings.HasSuffix(body, "\n") {
		_, _ = io.WriteString(s.w, "\n")
	}
}
