package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/prompt"
)

func newExecCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "exec <command>",
		Short: "Run qkit's own commands the way an assistant would",
		Long: `Run qkit's own commands the way an assistant runs them through the internal_command MCP tool
or an ACP slash command: only exposed commands, confirmation for changes, output capped, audited.`,
		Example: `  qkit exec internal --list
  qkit exec internal context show --json`,
		GroupID: groupCore,
	}
	c.AddCommand(newExecInternalCmd(a))
	return c
}

// execInternalOptions are the flags of `qkit exec internal`.
type execInternalOptions struct {
	flags   []string
	request string
	yes     bool
	asJSON  bool
	list    bool
	// catchInterrupts installs the Ctrl-C and SIGTERM handler on the command and returns its
	// context, cancelled by them (nil: none is installed).
	catchInterrupts func() context.Context
	// warnConfig prints the configuration's warnings (annWarnsInRun): for --list, which runs no
	// command that would print them (nil: none).
	warnConfig func()
}

// execResultJSON is what `qkit exec internal --json` prints.
type execResultJSON struct {
	CommandLine string `json:"command_line"`
	Output      string `json:"output"`
	Error       string `json:"error"`
	ExitCode    int    `json:"exit_code"`
	Confirmed   bool   `json:"confirmed"`
}

func newExecInternalCmd(a *app.App) *cobra.Command {
	opts := &execInternalOptions{}
	c := &cobra.Command{
		Use:   "internal {COMMAND [SUBCOMMAND] [ARGS...] | --request JSON|- | --list}",
		Short: "Run one internal command as an assistant would",
		Long: `Run one of qkit's exposed commands through the internal-command registry, exactly as the
internal_command MCP tool and ACP slash commands run it:
  - the command is checked against the registry; anything else is refused before it runs;
  - its arguments are passed as they are, never through a shell;
  - its output is capped at agent.max_response_size.

Commands that only read run at once. A change asks first on a terminal
(Run "qkit context add notes.md"? [y/N]); without a terminal it needs --yes. Changes listed in the
setting internal.trusted run without asking. Every run is written to <state>/audit.log.

Flags of the internal command are given with --flag NAME=VALUE (or --flag NAME for a switch). The
request can also be the JSON the MCP tool takes: {"command", "subcommand", "args", "flags"}.

With --json the result is {command_line, output, error, exit_code, confirmed}, also when the request
is refused or not confirmed (output is then empty and error holds the message). The exit code is the
internal command's (3 when the change was declined, 130 when the question was interrupted, 2 when
the request was refused).`,
		Example: `  qkit exec internal --list
  qkit exec internal context show --json
  qkit exec internal context add notes.md --yes
  qkit exec internal settings get agent.timeout
  qkit exec internal context add --flag global 'docs/**/*.md'
  echo '{"command":"settings","subcommand":"list"}' | qkit exec internal --request -`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.catchInterrupts = func() context.Context { catchInterruptsOn(c); return c.Context() }
			opts.warnConfig = func() { warnConfig(a, c) }
			return runExec(c.Context(), a, opts, args)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&opts.flags, "flag", nil, "an internal command's flag, `NAME=VALUE` or NAME for a switch (repeatable)")
	f.StringVar(&opts.request, "request", "", "the request as `JSON` {command, subcommand, args, flags}, or - (stdin)")
	f.BoolVarP(&opts.yes, "yes", "y", false, "confirm a change without asking")
	f.BoolVar(&opts.asJSON, "json", false, "print {command_line, output, error, exit_code, confirmed}")
	f.BoolVar(&opts.list, "list", false, "list the internal commands")
	c.MarkFlagsMutuallyExclusive("request", "list")
	c.MarkFlagsMutuallyExclusive("flag", "list")
	c.MarkFlagsMutuallyExclusive("flag", "request")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		// `qkit exec internal context add --global x`: the flag is the internal command's.
		if opt, ok := unknownOption(err); ok {
			err = fmt.Errorf("%w; the internal command's flags are given as --flag NAME[=VALUE]: --flag %s", err, strings.TrimLeft(opt, "-"))
		}
		return output.WithCode(output.ExitUsage, usageError{err})
	})
	_ = c.RegisterFlagCompletionFunc("flag", func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		// The deepest command the words reach: `context add notes.md --flag <TAB>` is context add's.
		reg := internalRegistry(a, nil)
		var e commands.Entry
		for n := len(args); n > 0 && e.Name == ""; n-- {
			e, _ = reg.Lookup(strings.Join(args[:n], " "))
		}
		var out []string
		for _, f := range e.Flags {
			if f.NoValue {
				out = append(out, f.Name+"\t"+f.Usage)
			} else {
				out = append(out, f.Name+"=\t"+f.Usage)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		reg := internalRegistry(a, nil)
		prefix := strings.Join(args, " ")
		var out []string
		for _, e := range reg.List() {
			if len(e.Path) == len(args)+1 && (prefix == "" || strings.HasPrefix(e.Name, prefix+" ")) {
				out = append(out, e.Path[len(args)]+"\t"+e.Short)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	// Not interruptible as a whole: exec internal waits only where its command would, or at the
	// question before a change (runExecInternal installs the handler for a change; an
	// interruptible command installs its own as it runs).
	return annotate(c, annWarnsInRun, "true")
}

// runExec is `qkit exec internal`: it builds the registry the request needs and runs it. With
// --json it prints the result object for a refused or unconfirmed request too; the message still
// goes to stderr and the exit code is the same.
func runExec(ctx context.Context, a *app.App, opts *execInternalOptions, args []string) error {
	reg := execRegistry(a, opts, args)
	if lite && execNeedsFull(a, reg, opts, args) {
		return forwardToFull() // nothing has run yet (forward.go)
	}
	if opts.list && opts.warnConfig != nil {
		opts.warnConfig()
	}
	err := runExecInternal(ctx, a, reg, opts, args)
	var failed execFailure
	if errors.As(err, &failed) {
		err = failed.err
		if jerr := output.JSON(a.IO.Out, execResultJSON{
			CommandLine: failed.commandLine, Output: "", Error: err.Error(), ExitCode: output.Code(err),
		}); jerr != nil {
			return jerr
		}
	}
	return err
}

// execRegistry builds the registry a request needs. A request naming an exposed group needs only
// that group's commands (building the whole tree costs more than running most commands); anything
// else (--list, --request, a command that is not exposed, whose error lists the available ones)
// gets the whole tree.
func execRegistry(a *app.App, opts *execInternalOptions, args []string) *commands.Registry {
	if len(args) > 0 && opts.request == "" && !opts.list {
		if only := commandNamed(args[:1]); only != "" {
			reg := internalRegistry(a, newRoot(scratchApp(a), only))
			if _, ok := reg.Lookup(args[0]); ok {
				return reg
			}
		}
	}
	return internalRegistry(a, nil)
}

// execNeedsFull reports whether the light build hands exec internal to qkit-full, asking reg, the
// registry the light build would run the request with: a request for a command reg does not have
// (a command the light build hands over is a stub there, exposing nothing; an unknown one's error
// lists every command of the whole tree), the help of one, or the whole listing (--list, bare
// help). A request on stdin (--request -) is handed over unread: qkit-full could not read it again.
// A command reg has runs here, whether given as words or with --request JSON; so does a request
// that does not parse (both builds report it alike); but not one that may open a questions store
// this build does not link (needsOtherStore), which would hand over in the middle of the run.
func execNeedsFull(a *app.App, reg *commands.Registry, opts *execInternalOptions, args []string) bool {
	if opts.list || opts.request == "-" || opts.request == "" && len(args) == 0 {
		return true
	}
	req := reg.FromWords(args, nil)
	if opts.request != "" {
		var err error
		if req, err = commands.ParseRequestNamed([]byte(opts.request), "--request"); err != nil {
			return false
		}
	}
	name := req.Command
	if name == commands.HelpName {
		if name = req.Subcommand; name == "" {
			return true // help lists every command
		}
	}
	e, ok := reg.Lookup(name)
	if !ok {
		return true
	}
	if len(e.Path) > 0 && !storeLinked(a) { // the tree is built only then: most runs never need it
		if c, _, err := newRoot(scratchApp(a), e.Path[0]).Find(e.Path); err == nil && needsOtherStore(a, c) {
			return true
		}
	}
	return false
}

// execFailure is a request that failed before its command ran (refused, or not confirmed), with
// the command line it named: --json still prints a result for it.
type execFailure struct {
	commandLine string
	err         error
}

func (e execFailure) Error() string { return e.err.Error() }
func (e execFailure) Unwrap() error { return e.err }

func runExecInternal(ctx context.Context, a *app.App, reg *commands.Registry, opts *execInternalOptions, args []string) error {
	fail := func(commandLine string, err error) error {
		if opts.asJSON {
			return execFailure{commandLine: commandLine, err: err}
		}
		return err
	}
	if opts.list {
		if len(args) > 0 {
			// `exec internal exec internal --list`: --list was meant for the words before it.
			var unknown *commands.UnknownCommandError
			if _, err := reg.Prepare(reg.FromWords(args, nil)); errors.As(err, &unknown) {
				return err
			}
			return output.UsageErrorf("--list lists every command and takes none; for one command's usage run: qkit exec internal help %s", strings.Join(args, " "))
		}
		return printInternalList(a, reg, opts.asJSON)
	}
	words := ""
	if len(args) > 0 {
		words = commands.CommandLine(args)
	}
	req, err := execRequest(a, reg, opts, args)
	if err != nil {
		return fail(words, err)
	}
	call, err := reg.Prepare(req)
	if err != nil {
		return fail(words, err)
	}
	if call.Access == commands.Change && opts.catchInterrupts != nil {
		// A change may ask first and must be audited: Ctrl-C at the question cancels it (exit 130,
		// audited as interrupted, as ACP's session/cancel and MCP's cancelled form are) and Ctrl-C
		// while it runs stops it, instead of ending the process at once. A read keeps the default,
		// immediate exit, as the command run directly does (the handler costs a thread).
		ctx = opts.catchInterrupts()
	}
	res, err := reg.Run(ctx, call, commands.RunOptions{Source: commands.SourceCLI, Confirm: cliConfirm(a, opts.yes)})
	if err != nil && !errors.Is(err, commands.ErrDeclined) && !errors.Is(err, commands.ErrInterrupted) {
		return fail(call.CommandLine, err)
	}
	if opts.asJSON {
		if jerr := output.JSON(a.IO.Out, execResultJSON{
			CommandLine: res.CommandLine, Output: res.Output, Error: res.Stderr,
			ExitCode: res.ExitCode, Confirmed: res.Confirmed,
		}); jerr != nil {
			return jerr
		}
	} else {
		out := res.Output
		if res.Truncation != nil {
			out += "\n" // the notice ends the output without a line break
		}
		if _, werr := io.WriteString(a.IO.Out, out); werr != nil {
			return werr
		}
		if _, werr := io.WriteString(a.IO.ErrOut, res.Stderr); werr != nil {
			return werr
		}
	}
	if res.ExitCode != 0 {
		return output.SilentError{Code: res.ExitCode}
	}
	return nil
}

// execRequest builds the request from --request or from the positional words and --flag.
func execRequest(a *app.App, reg *commands.Registry, opts *execInternalOptions, args []string) (commands.Request, error) {
	if opts.request != "" {
		if len(args) > 0 {
			return commands.Request{}, output.UsageErrorf("give the command either as words or with --request, not both")
		}
		data, name := []byte(opts.request), "--request"
		if opts.request == "-" {
			var err error
			if data, err = io.ReadAll(io.LimitReader(a.IO.In, 1<<20+1)); err != nil {
				return commands.Request{}, fmt.Errorf("read the request from stdin: %w", err)
			}
			name = "the request on stdin (--request -)"
		}
		return commands.ParseRequestNamed(data, name)
	}
	var flags map[string]string
	for _, kv := range opts.flags {
		name, value, _ := strings.Cut(kv, "=")
		if strings.TrimSpace(name) == "" {
			return commands.Request{}, output.UsageErrorf("invalid --flag %q: expected NAME=VALUE or NAME", kv)
		}
		if flags == nil {
			flags = map[string]string{}
		}
		flags[name] = value
	}
	return reg.FromWords(args, flags), nil
}

// cliConfirm asks on the terminal, or takes --yes; without a terminal it fails naming --yes. The
// question is one plain line, the command as Call.Display shows it (no argument can rewrite the
// question): Run "qkit context add notes.md"? [y/N]
// (a.Prompter, when set, asks instead: tests).
func cliConfirm(a *app.App, yes bool) commands.ConfirmFunc {
	return func(ctx context.Context, c *commands.Call) (bool, error) {
		if yes {
			return true, nil
		}
		p, err := a.Prompt("--yes")
		if err != nil {
			return false, err
		}
		question := "Run " + c.Display() + "?"
		var ok bool
		if a.Prompter != nil {
			ok, err = p.Confirm(ctx, question, false)
		} else {
			ok, err = prompt.ConfirmLine(ctx, a.IO.In, a.IO.ErrOut, question, false)
		}
		if errors.Is(err, prompt.ErrInterrupted) {
			// Ctrl-C at the question: the core records it as every door's cancel.
			return false, fmt.Errorf("%w: %w", commands.ErrInterrupted, err)
		}
		return ok, err
	}
}

// internalEntryJSON is one row of `qkit exec internal --list --json`.
type internalEntryJSON struct {
	Name        string          `json:"name"`
	Usage       string          `json:"usage"`
	Description string          `json:"description"`
	Access      commands.Access `json:"access"`
	Trusted     bool            `json:"trusted"`
	Flags       []commands.Flag `json:"flags"`
}

func printInternalList(a *app.App, reg *commands.Registry, asJSON bool) error {
	entries := reg.Runnable()
	if asJSON {
		rows := make([]internalEntryJSON, len(entries))
		for i, e := range entries {
			flags := e.Flags
			if flags == nil {
				flags = []commands.Flag{}
			}
			rows[i] = internalEntryJSON{
				Name: e.Name, Usage: e.Usage, Description: e.Short, Access: e.Access,
				Trusted: e.Access == commands.Change && reg.Trusted(e.Name), Flags: flags,
			}
		}
		return output.JSON(a.IO.Out, rows)
	}
	rows := make([][]string, len(entries))
	for i, e := range entries {
		access := string(e.Access)
		if e.Access == commands.Change && reg.Trusted(e.Name) {
			access += " (trusted)"
		}
		rows[i] = []string{e.Name, access, e.Short}
	}
	return printTable(a.IO.Out, a.IO.StdoutTTY, []string{"command", "access", "description"}, rows)
}
