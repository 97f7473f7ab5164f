package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/termtext"
)

func newSettingsCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "settings <command>",
		Short: "Show and change qkit's settings",
		Long: `Show and change qkit's settings (feature gates, the agent binary, limits).

Values come from, weakest first:
  1. the built-in default;
  2. config.yaml;
  3. the environment: QKIT_<KEY> with dots as underscores, plus AGENT_TIMEOUT,
     AGENT_MAX_RESPONSE_SIZE and ENABLE_ADDITIONAL_TOOLS;
  4. the --set flag.

Durations are written 90s, 3m or 1h (a plain number is seconds); sizes 2MB, 512KiB or a number of
bytes (KB and MB are binary).`,
		Example: `  qkit settings list
  qkit settings get agent.timeout
  qkit settings set agent.command kiro-cli
  qkit settings reset agent.command`,
		GroupID:     groupConfig,
		Annotations: map[string]string{annLenientConfig: "true"},
	}
	c.AddCommand(newSettingsListCmd(a), newSettingsGetCmd(a), newSettingsSetCmd(a), newSettingsResetCmd(a))
	return c
}

// settingJSON is one row of `settings list --json` and `settings get --json`. Default has the
// value's type and format (a size is a number of bytes in both, a duration "3m" in both).
type settingJSON struct {
	Key         string `json:"key"`
	Value       any    `json:"value"`
	Source      string `json:"source"`
	Origin      string `json:"origin"`
	Default     any    `json:"default"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

func toSettingJSON(v config.Value) settingJSON {
	return settingJSON{
		Key: v.Key.Name, Value: v.JSONValue(), Source: string(v.Source), Origin: v.Origin,
		Default: v.Key.JSONDefault(), Type: v.Key.Kind.String(), Description: v.Key.Help,
	}
}

// completeKeys completes setting keys, leaving out those already given.
func completeKeys(given []string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, k := range config.Keys {
		if !slices.Contains(given, k.Name) {
			out = append(out, k.Name+"\t"+k.Help)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeOneKey completes the first argument only.
func completeOneKey(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeKeys(nil)
}

func lookupKey(name string) (config.Key, error) {
	k, ok := config.LookupKey(name)
	if !ok {
		return k, output.WithCode(output.ExitUsage, config.UnknownKeyError(name))
	}
	return k, nil
}

// settingsListOptions are the flags of `settings list`.
type settingsListOptions struct{ asJSON bool }

func newSettingsListCmd(a *app.App) *cobra.Command {
	opts := &settingsListOptions{}
	c := &cobra.Command{
		Use:   "list",
		Short: "List every setting, its value and where the value came from",
		Long: `List every setting with its value and its source: default, file, env or flag.

On a terminal this is a table; piped, it is tab-separated lines (key, value, source); with --json an
array of {key, value, source, origin, default, type, description}.`,
		Example: `  qkit settings list
  qkit settings list --json | jq -r '.[] | select(.source != "default") | .key'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runSettingsList(a, opts) },
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: [{key, value, source, origin, default, type, description}]")
	return tableOnTTY(exposeRead(c))
}

func runSettingsList(a *app.App, opts *settingsListOptions) error {
	all := a.Config.All()
	if opts.asJSON {
		rows := make([]settingJSON, len(all))
		for i, v := range all {
			rows[i] = toSettingJSON(v)
		}
		return output.JSON(a.IO.Out, rows)
	}
	rows := make([][]string, len(all))
	for i, v := range all {
		src := string(v.Source)
		if v.Source == config.SourceEnv {
			src += " (" + v.Origin + ")"
		}
		rows[i] = []string{v.Key.Name, onScreenLine(a, v.Display()), src} // a value may hold anything
	}
	return printTable(a.IO.Out, a.IO.StdoutTTY, []string{"key", "value", "source"}, rows)
}

// settingsGetOptions are the flags of `settings get`.
type settingsGetOptions struct{ asJSON bool }

func newSettingsGetCmd(a *app.App) *cobra.Command {
	opts := &settingsGetOptions{}
	c := &cobra.Command{
		Use:   "get <key>",
		Short: "Print one setting's value",
		Long: `Print the bare value of one setting, for scripts. Lists print comma-separated. On a
terminal, control characters in the value are shown escaped (\x1b); piped, it is exact.`,
		Example: `  qkit settings get agent.command
  timeout=$(qkit settings get agent.timeout)`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeOneKey,
		RunE:              func(_ *cobra.Command, args []string) error { return runSettingsGet(a, opts, args[0]) },
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print {key, value, source, origin, default, type, description}")
	return exposeRead(c)
}

func runSettingsGet(a *app.App, opts *settingsGetOptions, name string) error {
	k, err := lookupKey(name)
	if err != nil {
		return err
	}
	v, _ := a.Config.Lookup(k.Name)
	if opts.asJSON {
		return output.JSON(a.IO.Out, toSettingJSON(v))
	}
	// A value may hold control characters (settings set takes what it is given): shown on a
	// terminal, exact for a script.
	_, err = fmt.Fprintln(a.IO.Out, onScreenLine(a, v.Display()))
	return err
}

// settingsSetOptions are the flags of `settings set`.
type settingsSetOptions struct{ asJSON bool }

// settingSetJSON is what `settings set --json` prints.
type settingSetJSON struct {
	Key   string `json:"key"`
	Value any    `json:"value"` // as settings get --json writes it
	File  string `json:"file"`
	// OverriddenBy names the variable or flag (--set) whose value wins over the file's, if any.
	OverriddenBy string `json:"overridden_by"`
}

func newSettingsSetCmd(a *app.App) *cobra.Command {
	opts := &settingsSetOptions{}
	c := &cobra.Command{
		Use:   "set <key> <value>",
		Short: "Change a setting in config.yaml",
		Long: `Validate a value and write it to config.yaml (atomically, under a lock, so concurrent
runs lose nothing). A variable in the environment still wins over the file; qkit says so.

On a terminal one line on stderr confirms the change. --json prints {key, value, file,
overridden_by}: value as settings get --json writes it, overridden_by the variable or --set that
wins over the file (empty when none does).`,
		Example: `  qkit settings set agent.timeout 5m
  qkit settings set tools.enabled q-developer-agent
  qkit settings set acp.enabled true`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return completeKeys(nil)
			}
			if k, ok := config.LookupKey(args[0]); ok && len(args) == 1 {
				if k.File {
					return nil, cobra.ShellCompDirectiveDefault
				}
				return k.Choices(), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSettingsSet(c.Context(), a, opts, args[0], args[1])
		},
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {key, value, file, overridden_by}")
	c.SetFlagErrorFunc(negativeValueHint)
	return annotate(exposeChange(c), annCreatesConfig, "true")
}

// negativeValueHint is the flag error of `settings set`: a value such as -5s is read as flags, so
// the error says how to pass it (after --), then the value's own check says what is wrong with it.
func negativeValueHint(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if short := ne.GetSpecifiedShortnames(); short != "" && strings.ContainsAny(short[:1], "0123456789.") {
			key := "KEY"
			if args := c.Flags().Args(); len(args) > 0 {
				key = args[0]
			}
			err = fmt.Errorf("-%s is read as flags: a value that starts with \"-\" goes after --, as in qkit settings set %s -- -%s", short, key, short)
		}
	}
	return output.WithCode(output.ExitUsage, usageError{err})
}

func runSettingsSet(ctx context.Context, a *app.App, opts *settingsSetOptions, name, value string) error {
	k, err := lookupKey(name)
	if err != nil {
		return err
	}
	parsed, err := k.Parse(value)
	if err != nil {
		return output.WithCode(output.ExitUsage, err)
	}
	if err := a.Config.Set(ctx, k.Name, value); err != nil {
		return err
	}
	if p := k.FileProblem(value); p != "" {
		a.Warnf("%s (set anyway; qkit reads it when it connects)", p)
	}
	overridden := ""
	if cur, _ := a.Config.Lookup(k.Name); cur.Source == config.SourceEnv || cur.Source == config.SourceFlag {
		overridden = cur.Origin
		a.Warnf("%s is also set by %s, which wins over config.yaml", k.Name, cur.Origin)
	}
	stored := config.Value{Key: k, Raw: value, Parsed: parsed, Source: config.SourceFile, Origin: a.Config.File}
	if a.IO.StderrTTY {
		a.Errorf("%s set to %s in %s", k.Name, termtext.VisibleLine(stored.Display()), a.Config.File)
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, settingSetJSON{Key: k.Name, Value: stored.JSONValue(), File: a.Config.File, OverriddenBy: overridden})
	}
	return nil
}

// settingsResetOptions are the flags of `settings reset`.
type settingsResetOptions struct{ all, yes, asJSON bool }

// settingsResetJSON is what `settings reset --json` prints.
type settingsResetJSON struct {
	File string `json:"file"`
	// Reset are the settings the file held and no longer does; NotSet those named that it did not hold.
	Reset  []string `json:"reset"`
	NotSet []string `json:"not_set"`
	// BrokenCopy is where a file that did not load was kept before --all replaced it.
	BrokenCopy string `json:"broken_copy"`
}

func newSettingsResetCmd(a *app.App) *cobra.Command {
	opts := &settingsResetOptions{}
	c := &cobra.Command{
		Use:   "reset {<key>... | --all}",
		Short: "Remove settings from config.yaml so their defaults apply",
		Long: `Remove one or more settings from config.yaml, or all of them with --all. Resetting everything
asks first on a terminal; elsewhere it needs --yes.

A config.yaml that does not load (a YAML mistake) is replaced by an empty one with --all; its
content is kept as config.yaml.broken.

On a terminal one line on stderr confirms the change. --json prints {file, reset, not_set,
broken_copy}: the settings removed from the file, those named that it did not hold, and where a
file that did not load was kept (empty otherwise).`,
		Example: `  qkit settings reset agent.timeout
  qkit settings reset --all --yes`,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if opts.all {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeKeys(args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSettingsReset(c.Context(), a, opts, args, c.Flag("config").Value.String())
		},
	}
	c.Flags().BoolVar(&opts.all, "all", false, "reset every setting")
	c.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {file, reset, not_set, broken_copy}")
	return annotate(guardedFlags(exposeChange(interruptible(c)), "all"), annRepairsConfig, "true")
}

func runSettingsReset(ctx context.Context, a *app.App, opts *settingsResetOptions, names []string, flagFile string) error {
	if opts.all == (len(names) > 0) {
		return output.WithCode(output.ExitUsage, usageError{fmt.Errorf("give either setting keys or --all")})
	}
	for _, name := range names {
		if _, err := lookupKey(name); err != nil {
			return err
		}
	}
	if a.Config.Broken != nil && !opts.all {
		return brokenConfigError(a.Config.Broken, flagFile)
	}
	if opts.all && !opts.yes {
		question := "Reset every setting in " + a.Config.File + "?"
		if a.Config.Broken != nil {
			question = a.Config.File + " does not load. Replace it with an empty one (its content is kept as " + a.Config.File + ".broken)?"
		}
		ok, err := a.Confirm(ctx, "--yes", question)
		if err != nil {
			return err
		}
		if !ok {
			return output.Errorf(output.ExitRejected, "reset cancelled")
		}
	}
	res := settingsResetJSON{File: a.Config.File, Reset: []string{}, NotSet: []string{}}
	asked := names
	if opts.all {
		asked = nil
		for _, k := range config.Keys {
			asked = append(asked, k.Name)
		}
	}
	for _, name := range asked {
		if v, _ := a.Config.Lookup(name); v.InFile {
			res.Reset = append(res.Reset, name)
		} else if !opts.all {
			res.NotSet = append(res.NotSet, name)
		}
	}
	var err error
	if a.Config.Broken != nil {
		res.BrokenCopy, err = a.Config.ResetBroken(ctx)
	} else {
		err = a.Config.Reset(ctx, names...)
	}
	if err != nil {
		return err
	}
	if a.IO.StderrTTY {
		a.Errorf("%s", resetSummary(res))
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, res)
	}
	return nil
}

// resetSummary is the line that confirms a reset on a terminal.
func resetSummary(r settingsResetJSON) string {
	var parts []string
	switch {
	case r.BrokenCopy != "":
		parts = append(parts, fmt.Sprintf("replaced %s with an empty configuration; its content is in %s", r.File, r.BrokenCopy))
	case len(r.Reset) > 0:
		parts = append(parts, fmt.Sprintf("reset %s to the default in %s", strings.Join(r.Reset, ", "), r.File))
	case len(r.NotSet) == 0:
		parts = append(parts, fmt.Sprintf("%s held no settings; nothing changed", r.File))
	}
	if len(r.NotSet) > 0 {
		parts = append(parts, fmt.Sprintf("%s not set in %s", strings.Join(r.NotSet, ", "), r.File))
	}
	return strings.Join(parts, "; ")
}
