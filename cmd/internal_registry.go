package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
)

// inheritedExposed maps the global flags an internal command may be given to the commands that read
// them: --profile only means something to the commands that load the context through loadContextEnv,
// so only they list it (an assistant is never offered a flag that does nothing). The other global
// flags (--config, --set, --log-level, --no-input) belong to the process, not to an assistant.
// TestProfileFlagListedWhereUsed keeps this in step with what the commands do.
var inheritedExposed = map[string][]string{
	"profile": {"context add", "context clear", "context prompt", "context rm", "context show"},
}

// internalRegistry builds the internal-command registry over the command tree of root (a fresh tree
// when root is nil), with a's settings for trust, output cap and the audit log.
// A registry over a fresh tree finds its entries when first used (commands.NewLazy): building the
// whole tree was most of what a server did before it could list its tools.
func internalRegistry(a *app.App, root *cobra.Command) *commands.Registry {
	opts := commands.Options{Now: a.Now, Logger: a.Logger}
	if a.Config != nil {
		opts.Trusted = currentTrusted(a)
		opts.MaxOutput = config.AgentMaxResponseSize.Get(a.Config)
		opts.AuditPath = filepath.Join(a.Config.Paths.State, "audit.log")
	}
	exec := treeExecutor{parent: a, maxOutput: opts.MaxOutput}
	if root == nil {
		// The whole tree's description is generated with the program (describedCommands): a server
		// lists internal_command without building the tree, which its first call builds.
		opts.Description = describedCommands
		return commands.NewLazy(func() []commands.Entry { return internalEntries(NewRoot(scratchApp(a))) }, exec, opts)
	}
	return commands.New(internalEntries(root), exec, opts)
}

// currentTrusted returns internal.trusted as the configuration holds it now, read again for each
// call: a server keeps its registry for hours, and a trust the user withdrew (qkit settings reset
// internal.trusted) must stop covering its next call. The file is small; reading it costs far less
// than building the tree the call runs on. When it cannot be read, nothing is trusted: every change
// asks.
func currentTrusted(a *app.App) func() []string {
	cfg := a.Config
	return func() []string {
		now, err := cfg.Reload()
		if err != nil {
			a.Logger.Warn("internal.trusted: cannot read the configuration again; every change asks", "err", err)
			return nil
		}
		return config.InternalTrusted.Get(now)
	}
}

// flagSet reads an annotation listing flag names, comma-separated.
func flagSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(strings.TrimLeft(f, "-")); f != "" {
			set[f] = true
		}
	}
	return set
}

// internalEntries walks the tree for commands annotated with annExposure.
func internalEntries(root *cobra.Command) []commands.Entry {
	var out []commands.Entry
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			if access := sub.Annotations[annExposure]; access != "" {
				out = append(out, entryFor(sub, commands.Access(access)))
			}
			walk(sub)
		}
	}
	walk(root)
	return out
}

func entryFor(c *cobra.Command, access commands.Access) commands.Entry {
	change, guarded := flagSet(c.Annotations[annChangeFlags]), flagSet(c.Annotations[annGuardedFlags])
	e := commands.Entry{
		Path:    strings.Fields(c.CommandPath())[1:],
		Short:   c.Short,
		Usage:   strings.TrimPrefix(c.UseLine(), c.Root().Name()+" "),
		Example: c.Example,
		Access:  access,
	}
	add := func(f *pflag.Flag) {
		if f.Name == "help" || f.Hidden {
			return
		}
		e.Flags = append(e.Flags, commands.Flag{
			Name: f.Name, Shorthand: f.Shorthand, Type: f.Value.Type(), Usage: f.Usage,
			Default: f.DefValue, NoValue: f.NoOptDefVal != "", Change: change[f.Name], Guarded: guarded[f.Name],
		})
	}
	// c.Flags() and c.PersistentFlags() rather than LocalFlags()/InheritedFlags(): those merge the
	// persistent flags of every ancestor into each command, which costs more than the rest of the walk.
	seen := map[string]bool{}
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				add(f)
			}
		})
	}
	for name, users := range inheritedExposed {
		if !slices.Contains(users, strings.Join(e.Path, " ")) {
			continue
		}
		for p := c.Parent(); p != nil && !seen[name]; p = p.Parent() {
			if f := p.PersistentFlags().Lookup(name); f != nil {
				seen[name] = true
				add(f)
			}
		}
	}
	return e
}

// scratchApp is an App on buffers, never a terminal, for trees that are only inspected or that run
// one internal command.
func scratchApp(parent *app.App) *app.App {
	streams, _, _, _ := app.Test()
	streams.NoInput = true
	a := app.New(streams, parent.Version)
	a.Now = parent.Now
	return a
}

// treeExecutor checks and runs internal commands on fresh command trees, in-process.
type treeExecutor struct {
	parent    *app.App
	maxOutput int64
	newRoot   func(*app.App) *cobra.Command // nil: the tree Run would build for argv; tests add commands
}

// tree builds the command tree for argv: only the top-level command it names, as Run does.
func (e treeExecutor) tree(a *app.App, argv []string) *cobra.Command {
	if e.newRoot != nil {
		return e.newRoot(a)
	}
	return newRoot(a, commandNamed(argv))
}

// Check parses argv's flags and arguments as the command would, without running it.
func (e treeExecutor) Check(argv []string) error {
	root := e.tree(scratchApp(e.parent), argv)
	c, rest, err := root.Find(argv)
	if err != nil {
		return err
	}
	c.InitDefaultHelpFlag()
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	help, _ := c.Flags().GetBool("help")
	// cobra descends into subcommands by the words after the path, so an argument could name a child
	// that is not exposed (`parent secret`); what runs must be what the registry validated. A group
	// is reached only for its --help, and `help TOPIC` is the help command the registry checked.
	if c.Annotations[annExposure] == "" && !(help && exposesAny(c)) && !(argv[0] == commands.HelpName && (c == root || c.Parent() == root && c.Name() == commands.HelpName)) {
		return fmt.Errorf("%q is not an exposed command", strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
	}
	if help {
		return nil
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return err
	}
	if err := c.ValidateRequiredFlags(); err != nil {
		return err
	}
	return c.ValidateFlagGroups()
}

// exposesAny reports whether c or a command below it is exposed.
func exposesAny(c *cobra.Command) bool {
	if c.Annotations[annExposure] != "" {
		return true
	}
	for _, sub := range c.Commands() {
		if exposesAny(sub) {
			return true
		}
	}
	return false
}

// Run executes argv on a fresh tree whose streams are buffers: stdin is empty and nothing prompts.
// The parent's config file and --set overrides carry over.
func (e treeExecutor) Run(ctx context.Context, argv []string, source, dir string) (out commands.Output) {
	stdout := output.NewHeadBuffer(e.maxOutput)
	var stderr bytes.Buffer
	child := scratchApp(e.parent)
	child.IO.Out, child.IO.ErrOut = stdout, &stderr
	child.Source = source
	child.Dir = dir
	defer func() {
		// A bug in one command must not take down the server that ran it for an assistant.
		if p := recover(); p != nil {
			e.parent.Logger.Error("internal command panicked", "argv", argv, "panic", p)
			fmt.Fprintf(&stderr, "qkit: internal error in %q: %v\n", strings.Join(argv, " "), p)
			out = commands.Output{Stdout: string(stdout.Head()), Total: stdout.Total(), Stderr: stderr.String(), ExitCode: output.ExitFailure}
		}
	}()
	full := append(globalArgs(e.parent), argv...)
	code := runRoot(ctx, child, e.tree(child, full), full)
	return commands.Output{Stdout: string(stdout.Head()), Total: stdout.Total(), Stderr: stderr.String(), ExitCode: code}
}

// globalArgs carries the parent's --config, --set and --profile over to an internal command (a
// --profile in the request comes later in argv and wins).
func globalArgs(a *app.App) []string {
	var args []string
	if a.ProfileFlag != "" {
		args = append(args, "--profile="+a.ProfileFlag)
	}
	if a.Config == nil {
		return args
	}
	if _, err := os.Stat(a.Config.File); err == nil {
		// (A config file that does not exist yet is the default one, which the command finds by
		// itself; --config must name a file that exists.)
		args = append(args, "--config="+a.Config.File)
	}
	for _, v := range a.Config.All() {
		if v.Source == config.SourceFlag {
			args = append(args, "--set="+v.Key.Name+"="+v.Raw)
		}
	}
	return args
}

// InternalRegistry returns the internal-command registry over a fresh command tree, with a's
// settings (a's configuration must be loaded). Servers (MCP, ACP) build one when they start; the
// tree is built when the registry is first used, except by Describe, which the full build answers
// from the text generated with it (DescribeInternalCommands).
func InternalRegistry(a *app.App) *commands.Registry { return internalRegistry(a, nil) }

// DescribeInternalCommands is the internal_command tool's description as the whole tree gives it,
// built now: what make docs writes to cmd/internal_commands.txt, the copy the full build serves.
func DescribeInternalCommands() string {
	streams, _, _, _ := app.Test()
	a := app.New(streams, app.VersionInfo{})
	return commands.New(internalEntries(NewRoot(a)), treeExecutor{parent: a}, commands.Options{}).Describe()
}
