// Package cmd holds qkit's cobra commands: each parses flags into an options struct, calls a core
// package under internal/, and renders the result. No behaviour lives here that a second front end
// (MCP, ACP, internal commands) would need.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/procgroup"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// Main runs qkit with the process's streams and returns the exit code. Only main calls os.Exit.
func Main(args []string) int {
	starting()
	if lite && forwardsWhole(args) {
		// The light build hands these to qkit-full before anything else (forward.go).
		err := forwardToFull()
		fmt.Fprintf(os.Stderr, "qkit: %v\n", err)
		return output.Code(err)
	}
	return MainStreams(app.System(), args)
}

// MainStreams is Main on the given streams (the testscripts keep a copy of stdout through it).
func MainStreams(s *app.Streams, args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // also releases the signal handler of an interruptible command
	return Run(ctx, app.New(s, buildVersion()), args)
}

// Run executes one command line against a fresh command tree on a's streams, prints any error to
// a's stderr as "qkit: <message>" and returns the exit code.
func Run(ctx context.Context, a *app.App, args []string) int {
	return runRoot(ctx, a, newRoot(a, commandNamed(args)), args)
}

// runRoot is Run on a tree built for a (internal commands run on a fresh one each time).
func runRoot(ctx context.Context, a *app.App, root *cobra.Command, args []string) int {
	// The stop-signal handler of an interruptible command lives until this context ends: an internal
	// command run on a server's context must not leave its handler behind (catchInterruptsOn).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	interrupted := ctx.Err() != nil || cmd != nil && cmd.Context() != nil && cmd.Context().Err() != nil
	stopped := output.ExitInterrupted
	sig, bySignal := syscall.Signal(0), false
	if cmd != nil {
		if sig, bySignal = signalOf(cmd.Context()); bySignal {
			stopped = output.SignalCode(int(sig))
		}
	}
	if err == nil && interrupted {
		// A server stopped by a signal ends normally (nothing to report) but still exits 128+n,
		// as help exit-codes promises for every interrupted command.
		return stopped
	}
	if err == nil {
		return output.ExitOK
	}
	err = classify(cmd, err)
	code := output.Code(err)
	if interrupted && (code == output.ExitFailure || code == output.ExitInterrupted) {
		code = stopped
	}
	var silent output.SilentError
	if !errors.As(err, &silent) {
		if bySignal && sig == syscall.SIGINT && a.IO.StderrTTY {
			// The terminal echoed ^C without a line break: the message starts a line of its own.
			fmt.Fprintln(a.IO.ErrOut)
		}
		// Errors quote what they were given: file names and link targets from a repository, a
		// setting's value, an agent's text. They reach stderr through the one filter, so none of it
		// can drive the terminal; a message of several lines keeps its line breaks.
		fmt.Fprintf(a.IO.ErrOut, "qkit: %s\n", termtext.Visible(strings.TrimRight(err.Error(), "\n")))
	}
	if code == output.ExitUsage && isUsageProblem(err) && cmd != nil {
		fmt.Fprintf(a.IO.ErrOut, "Usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return code
}

// usageError marks the errors cobra itself raises for a bad command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func isUsageProblem(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// classify is the one place an error becomes a usage error by where it came from rather than by
// its type: cobra's own errors for a command line it cannot place (an unknown command before any is
// found). Every other usage error is typed where it is made: flag parsing (the root's
// FlagErrorFunc), argument validators (usageArgs, on every command) and flag groups (checkFlags, in
// the root's PersistentPreRunE).
func classify(cmd *cobra.Command, err error) error {
	var coded *output.Error
	if errors.As(err, &coded) {
		return err
	}
	if cmd == nil {
		// Nothing was found to run: the command line itself is wrong.
		return output.WithCode(output.ExitUsage, usageError{err})
	}
	return err
}

// usageArgs makes an argument validator's errors usage errors (exit 2, usage line printed).
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		err := v(c, args)
		var coded *output.Error
		if err != nil && !errors.As(err, &coded) {
			return output.WithCode(output.ExitUsage, usageError{err})
		}
		return err
	}
}

// typeArgErrors wraps every command's argument validator with usageArgs.
func typeArgErrors(c *cobra.Command) {
	if c.Args != nil {
		c.Args = usageArgs(c.Args)
	}
	for _, sub := range c.Commands() {
		typeArgErrors(sub)
	}
}

// checkFlags runs cobra's required-flag and flag-group checks ahead of cobra (which runs them after
// the pre-run hooks and returns them untyped), so they are usage errors.
func checkFlags(c *cobra.Command) error {
	if err := c.ValidateRequiredFlags(); err != nil {
		return output.WithCode(output.ExitUsage, usageError{err})
	}
	if err := c.ValidateFlagGroups(); err != nil {
		return output.WithCode(output.ExitUsage, usageError{err})
	}
	return nil
}

// rootOptions are the global flags.
type rootOptions struct {
	configFile string
	logLevel   string
	noInput    bool
	set        []string
}

// NewRoot builds the whole command tree on a. Every call returns a fresh, independent tree: the
// internal-command registry runs commands on one of its own.
func NewRoot(a *app.App) *cobra.Command { return newRoot(a, "") }

// newRoot builds the tree with every top-level command, or with only the one named only: a run
// that names its command needs no other, and building them all is a fifth of qkit's start-up work.
func newRoot(a *app.App, only string) *cobra.Command {
	opts := &rootOptions{}
	root := &cobra.Command{
		Use:   "qkit <command>",
		Short: "Make the Amazon Q Developer CLI scriptable and connectable",
		Long: `qkit runs the Amazon Q Developer CLI (q, or kiro-cli) from scripts, CI, MCP clients and editors.

It keeps sticky context files that are sent with every prompt, serves Q as MCP tools and as an
Agent Client Protocol agent, and lets a person answer an assistant's questions from a terminal.`,
		Example: `  # Ask Q something from a script, with your context files prepended
  qkit ask "Summarise the open TODOs in this repository"

  # Keep docs/*.md in every prompt
  qkit context add 'docs/**/*.md'

  # Serve the MCP tools to Claude Code, Cursor or Q itself
  qkit mcp serve

  # Show every setting and where its value came from
  qkit settings list`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if err := checkFlags(c); err != nil {
				return err
			}
			if lite && needsFull(a, c) {
				return forwardToFull() // before the command has any effect (forward.go)
			}
			catchInterrupts(c)
			return loadApp(a, c, opts)
		},
	}
	root.SetIn(a.IO.In)
	root.SetOut(a.IO.Out)
	root.SetErr(a.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return output.WithCode(output.ExitUsage, usageError{err})
	})
	defineGlobalFlags(root.PersistentFlags(), opts, &a.ProfileFlag)
	// qkit --version prints what qkit version prints (cobra handles the flag before any hook runs).
	root.Version = versionLine(a.Version)
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version, as qkit version does")
	_ = root.RegisterFlagCompletionFunc("profile", completeProfiles(a, nil))
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(config.LogLevel.Key().Values, cobra.ShellCompDirectiveNoFileComp))

	root.AddGroup(
		&cobra.Group{ID: groupCore, Title: "Core commands:"},
		&cobra.Group{ID: groupServe, Title: "Servers for assistants and editors:"},
		&cobra.Group{ID: groupConfig, Title: "Configuration:"},
	)
	root.SetHelpCommand(newHelpCmd())
	root.SetCompletionCommandGroupID(groupConfig)
	for _, tc := range topCommands() {
		if only == "" || tc.name == only {
			root.AddCommand(tc.build(a))
		}
	}
	if only == "" {
		root.AddCommand(newTopics()...)
	} else {
		// A tree for one named command never runs `completion` (commandNamed does not name it), and
		// cobra's completion commands cost about as much to build as a small command group.
		root.CompletionOptions.DisableDefaultCmd = true
	}
	root.InitDefaultCompletionCmd()
	addCompletionExamples(root)
	requireKnownSubcommands(root)
	suggestSubcommands(root)
	completeNothingWithoutArgs(root)
	typeArgErrors(root)
	return root
}

// addCompletionExamples gives cobra's completion commands the examples every qkit command has.
func addCompletionExamples(root *cobra.Command) {
	comp, _, err := root.Find([]string{"completion"})
	if err != nil || comp == root {
		return
	}
	comp.Example = `  source <(qkit completion bash)
  qkit completion zsh > "${fpath[1]}/_qkit"
  qkit completion fish > ~/.config/fish/completions/qkit.fish`
	examples := map[string]string{
		"bash":       "  source <(qkit completion bash)\n  qkit completion bash > /etc/bash_completion.d/qkit",
		"zsh":        "  qkit completion zsh > \"${fpath[1]}/_qkit\"",
		"fish":       "  qkit completion fish > ~/.config/fish/completions/qkit.fish",
		"powershell": "  qkit completion powershell | Out-String | Invoke-Expression",
	}
	for _, sub := range comp.Commands() {
		sub.Example = examples[sub.Name()]
	}
}

// completeNothingWithoutArgs stops shells from offering file names for commands that take no
// arguments (cobra's default for a command without a completion function is file names).
func completeNothingWithoutArgs(c *cobra.Command) {
	if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && c.Args != nil && c.Args(c, []string{"x"}) != nil {
		c.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, sub := range c.Commands() {
		completeNothingWithoutArgs(sub)
	}
}

// requireKnownSubcommands makes every command group fail on an unknown subcommand (exit 2, with
// cobra's "unknown command" message and the nearest subcommands) instead of printing its help and succeeding, and print its help
// when run bare.
func requireKnownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(c, args)
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	for _, sub := range c.Commands() {
		requireKnownSubcommands(sub)
	}
}

// suggestSubcommands adds "did you mean" to the error of a command group that runs its own RunE on
// an unknown subcommand (context keeps Q's "Unknown context subcommand: X" message): cobra suggests
// only for groups it rejects itself.
func suggestSubcommands(c *cobra.Command) {
	if run := c.RunE; c.HasSubCommands() && run != nil {
		c.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			if err == nil || len(args) == 0 || output.Code(err) != output.ExitUsage {
				return err
			}
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				return output.WithCode(output.ExitUsage, usageError{fmt.Errorf("%w; did you mean %s?", err, strings.Join(s, " or "))})
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		suggestSubcommands(sub)
	}
}

const (
	groupCore   = "core"
	groupServe  = "serve"
	groupConfig = "config"
)

// defineGlobalFlags defines the flags every command takes on fs.
func defineGlobalFlags(fs *pflag.FlagSet, opts *rootOptions, profile *string) {
	fs.StringVar(&opts.configFile, "config", "", "read settings from `FILE` instead of <config>/config.yaml")
	fs.StringVar(&opts.logLevel, "log-level", "", "log `LEVEL` on stderr: debug, info, warn or error (default: log.level)")
	fs.BoolVar(&opts.noInput, "no-input", false, "never prompt; fail with the flag to pass instead")
	fs.StringArrayVar(&opts.set, "set", nil, "override a setting for this run, as `KEY=VALUE` (repeatable)")
	fs.StringVar(profile, "profile", "", "context profile `NAME` to use instead of the active one")
}

// topCommand is a top-level command and how to build it.
type topCommand struct {
	name  string
	build func(*app.App) *cobra.Command
}

// topCommands lists the top-level commands. Each group adds itself here.
func topCommands() []topCommand {
	return []topCommand{
		{"context", newContextCmd},
		{"exec", newExecCmd},
		{"settings", newSettingsCmd},
		{"mcp", forwardedCommand("mcp")}, // forward.go: the light build's stubs hand these to qkit-full
		{"ask", newAskCmd},
		{"questions", newQuestionsCmd},
		{"sessions", forwardedCommand("sessions")},
		{"acp", forwardedCommand("acp")},
		{"doctor", forwardedCommand("doctor")},
		{"version", newVersionCmd},
		{"exit-codes", func(*app.App) *cobra.Command { return newExitCodesTopic() }},
	}
}

// commandNamed returns the top-level command args run, when it is certain: the first word after the
// global flags, if it names one. Anything else (help, completion, an unknown word or flag) gets the
// whole tree, so help, suggestions and completion see every command.
func commandNamed(args []string) string {
	if i := firstWord(args); i >= 0 {
		for _, tc := range topCommands() {
			if tc.name == args[i] {
				return args[i]
			}
		}
	}
	return ""
}

// firstWord is the index in args of the first word after the global flags, or -1 when there is
// none or a flag comes first that is not a global one given as --name (the tree has to parse it).
func firstWord(args []string) int {
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	defineGlobalFlags(global, &rootOptions{}, new(string))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			return i
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := global.Lookup(name)
		if f == nil || !strings.HasPrefix(arg, "--") {
			return -1
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value is the next word
		}
	}
	return -1
}

// annCreatesConfig marks the command that may be given a --config file that does not exist yet:
// settings set, which creates it.
const annCreatesConfig = "qkit/creates-config"

// annRepairsConfig marks the command that runs when the config file's content does not load
// (settings reset: --all replaces the file).
const annRepairsConfig = "qkit/repairs-config"

// brokenConfigError is the error for a config file whose content does not load, with the two ways
// out. flagFile is the --config given, which the reset must name too.
func brokenConfigError(fe *config.FileError, flagFile string) error {
	reset := "qkit settings reset --all"
	if flagFile != "" {
		reset = "qkit --config " + flagFile + " settings reset --all"
	}
	return fmt.Errorf("%w; edit %s or run %s", fe, fe.File, reset)
}

// annLenientConfig marks commands that run even when the configuration has bad values (so the
// settings commands can fix them).
const annLenientConfig = "qkit/lenient-config"

// stopSignals are the signals that end an interruptible command: Ctrl-C, SIGTERM (a supervisor or a
// client stopping a server), SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\). Each cancels the
// command's context, so it stops every process group it started and exits 128 + the signal's number
// (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT), as a shell reports a process
// the signal killed; left to Go's defaults, SIGHUP and SIGQUIT would end qkit at once and leave the
// agent running.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// stopEverything ends every process qkit started, at once (procgroup.Shutdown): qkit itself is
// stopping, on a stop signal or at the end of a server's input. The cmd tests run commands and
// servers side by side in one process and replace it, so one test's end does not end another's
// agent; the real binary is tested by servers_test.go and the testscripts.
var stopEverything = procgroup.Shutdown

// signalled is the cause of a command context that a stop signal cancelled.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return s.sig.String() + " received" }

// signalOf returns the stop signal that cancelled ctx, if one did.
func signalOf(ctx context.Context) (syscall.Signal, bool) {
	if ctx == nil {
		return 0, false
	}
	var s signalled
	if errors.As(context.Cause(ctx), &s) {
		return s.sig, true
	}
	return 0, false
}

// catchInterrupts gives an interruptible command (see annInterruptible) a context that the
// stopSignals cancel, with the signal as its cause. The handler is released when the caller's
// context ends (Run's caller cancels it as it returns).
//
// Shell completion (cobra's __complete) gets the handler too: completing --model may list the
// agent's models, a process of its own. A completion a signal ended prints nothing, on stdout or
// stderr (what it had was cut short), and exits 128 + the signal's number, with the listing stopped.
func catchInterrupts(c *cobra.Command) {
	switch {
	case c.Name() == cobra.ShellCompRequestCmd || c.Name() == cobra.ShellCompNoDescRequestCmd:
		catchInterruptsOn(c)
		c.Root().SetOut(untilDone{ctx: c.Context(), w: c.Root().OutOrStdout()})
		c.Root().SetErr(untilDone{ctx: c.Context(), w: c.Root().ErrOrStderr()})
	case c.Annotations[annInterruptible] != "":
		catchInterruptsOn(c)
	}
}

// untilDone writes to w until ctx ends, and then drops what it is given.
type untilDone struct {
	ctx context.Context
	w   io.Writer
}

func (u untilDone) Write(p []byte) (int, error) {
	if u.ctx.Err() != nil {
		return len(p), nil
	}
	return u.w.Write(p)
}

// catchInterruptsOn installs the handler catchInterrupts installs for an interruptible command on c,
// whatever its annotations (exec internal, for a change).
func catchInterruptsOn(c *cobra.Command) {
	parent := c.Context()
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	go func() {
		select {
		case sig := <-ch:
			// qkit itself is stopping: everything it started gets SIGTERM first and SIGKILL
			// shortly after, rather than the gentle end of a turn (an ACP agent's stdin closed,
			// then a wait), which the cancel below would start. A run whose agent is gone before
			// its context ends still reports a cancellation (procgroup.ErrShutdown).
			stopEverything()
			if s, ok := sig.(syscall.Signal); ok {
				cancel(signalled{s})
			} else {
				cancel(signalled{syscall.SIGINT})
			}
		case <-ctx.Done():
		}
	}()
	// A second signal while the command cleans up is caught too (and ignored) until the caller's
	// context ends, so the clean-up is not cut short.
	context.AfterFunc(parent, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	})
	c.SetContext(ctx)
}

func loadApp(a *app.App, c *cobra.Command, opts *rootOptions) error {
	a.IO.NoInput = a.IO.NoInput || opts.noInput
	overrides := map[string]string{}
	for _, kv := range opts.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return output.UsageErrorf("invalid --set %q: expected KEY=VALUE", kv)
		}
		overrides[strings.TrimSpace(k)] = v
	}
	if opts.configFile != "" && c.Annotations[annCreatesConfig] == "" {
		// A --config that names no file is a typo, not an empty configuration: reading the
		// defaults instead would hide it. (settings set creates the file.)
		if _, err := os.Stat(opts.configFile); errors.Is(err, fs.ErrNotExist) {
			return output.UsageErrorf("--config %s: no such file (qkit --config %s settings set KEY VALUE creates it)", opts.configFile, opts.configFile)
		}
	}
	err := a.Load(config.LoadOptions{File: opts.configFile, Overrides: overrides, KeepBroken: c.Annotations[annRepairsConfig] != ""}, opts.logLevel)
	var unknown config.UnknownKeyError
	if errors.As(err, &unknown) {
		return output.WithCode(output.ExitUsage, err)
	}
	var broken *config.FileError
	if errors.As(err, &broken) {
		return brokenConfigError(broken, opts.configFile)
	}
	if err != nil {
		return err
	}
	if lite && needsOtherStore(a, c) {
		// The configuration is read, nothing else done (not even its warnings printed: qkit-full
		// prints them).
		return forwardToFull()
	}
	if c.Annotations[annWarnsInRun] == "" {
		warnConfig(a, c)
	}
	if len(a.Config.Problems) > 0 && !lenient(c) {
		msgs := make([]string, len(a.Config.Problems))
		for i, p := range a.Config.Problems {
			msgs[i] = p.Error()
			var ve *config.ValueError
			if errors.As(p, &ve) {
				msgs[i] += " (" + ve.Hint() + ")"
			}
		}
		return output.UsageErrorf("bad setting: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// warnConfig prints what is wrong in the configuration but does not stop c: unknown keys, and bad
// values that c takes the default for.
func warnConfig(a *app.App, c *cobra.Command) {
	for _, u := range a.Config.Unknown {
		a.Warnf("%s: ignored: %v", a.Config.File, u)
	}
	if len(a.Config.Problems) > 0 && lenient(c) {
		for _, p := range a.Config.Problems {
			a.Warnf("%v (the default is used)", p)
		}
	}
}

func lenient(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if c.Annotations[annLenientConfig] != "" {
			return true
		}
	}
	return false
}
