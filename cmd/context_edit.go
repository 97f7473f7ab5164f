package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
)

// contextEditJSON is the --json output of add, rm and clear.
type contextEditJSON struct {
	Scope   string   `json:"scope"`
	Profile string   `json:"profile,omitempty"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Missing []string `json:"missing,omitempty"`
	Cleared *int     `json:"cleared,omitempty"`
}

func editJSON(t contextfiles.Target) contextEditJSON {
	j := contextEditJSON{Scope: t.Scope()}
	if !t.Global {
		j.Profile = t.Profile
	}
	return j
}

// contextAddOptions are the flags of `context add`.
type contextAddOptions struct {
	global bool
	force  bool
	asJSON bool
}

func newContextAddCmd(a *app.App) *cobra.Command {
	opts := &contextAddOptions{}
	c := &cobra.Command{
		Use:   "add [--global] [--force] <path>...",
		Short: "Add files, folders or globs to the context",
		Long: `Add paths to the active profile's context, or to the global context with --global.

A path may be a file, a folder (its files, not its subfolders), or a glob ('docs/**/*.md': **
crosses folders, * does not). ~ is your home folder. A relative path is stored as given and
resolved against the working directory each time a prompt is built. Every path is checked before
any is written: a missing path or a glob that matches nothing is refused unless --force, and a path
already in the context is refused.

A relative path whose real path lies outside the working directory (a link out, or under a folder
that is one) is refused unless --force. It would never be read from here: a relative rule takes
nothing outside the folder it is resolved in. An absolute or ~ path is taken as given. A hard
link is the file itself and is taken like any file (git never creates one). A binary or non-UTF-8
file is added with a warning on stderr: its content is never sent (qkit context show lists it under
"Never sent").

--json prints {scope, profile, added}.`,
		Example: `  qkit context add README.md 'docs/**/*.md'
  qkit context add --global '~/.config/q-rules/*.md'
  qkit context add --force 'generated/*.md'   # not there yet`,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(c *cobra.Command, args []string) error { return runContextAdd(c.Context(), a, opts, args) },
	}
	c.Flags().BoolVarP(&opts.global, "global", "g", false, "add to the global context instead of the profile's")
	c.Flags().BoolVarP(&opts.force, "force", "f", false, "add missing paths, globs that match nothing, and links out of this folder")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {scope, profile, added}")
	return exposeChange(c)
}

func runContextAdd(ctx context.Context, a *app.App, opts *contextAddOptions, paths []string) error {
	env, err := loadContextEnv(a)
	if err != nil {
		return err
	}
	t := env.target(opts.global)
	added, err := env.store.Add(ctx, t, paths, contextfiles.AddOptions{
		Cwd: env.cwd, Force: opts.force,
		Warn: func(msg string) { a.Warnf("%s", msg) },
	})
	if err != nil {
		return err
	}
	if opts.asJSON {
		j := editJSON(t)
		j.Added = added
		return output.JSON(a.IO.Out, j)
	}
	a.Errorf("Added %s to %s context.", plural(len(added), "path", "paths"), t.Scope())
	return nil
}

// contextRmOptions are the flags of `context rm`.
type contextRmOptions struct {
	global bool
	asJSON bool
}

func newContextRmCmd(a *app.App) *cobra.Command {
	opts := &contextRmOptions{}
	c := &cobra.Command{
		Use:     "rm [--global] <path>...",
		Aliases: []string{"remove"},
		Short:   "Remove paths from the context",
		Long: `Remove paths from the active profile's context, or from the global context with --global.
Paths are compared as they were added (see qkit context show). Paths that are not there are named
in a warning; when none is there, nothing changes and the command fails.

--json prints {scope, profile, removed, missing}.`,
		Example: `  qkit context rm README.md
  qkit context rm --global '~/.config/q-rules/*.md'`,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return completeConfiguredPaths(a, opts.global, args)
		},
		RunE: func(c *cobra.Command, args []string) error { return runContextRm(c.Context(), a, opts, args) },
	}
	c.Flags().BoolVarP(&opts.global, "global", "g", false, "remove from the global context instead of the profile's")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {scope, profile, removed, missing}")
	return exposeChange(c)
}

// completeConfiguredPaths completes the rules of the list rm would change, minus those already given.
func completeConfiguredPaths(a *app.App, global bool, given []string) ([]string, cobra.ShellCompDirective) {
	s, err := contextStore(a)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	profile, err := s.ResolveProfile(a.ProfileFlag)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	rules, err := s.Rules(contextfiles.Target{Global: global, Profile: profile})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	done := map[string]bool{}
	for _, g := range given {
		done[g] = true
	}
	var out []string
	for _, r := range rules {
		if !done[r] {
			out = append(out, r)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func runContextRm(ctx context.Context, a *app.App, opts *contextRmOptions, paths []string) error {
	env, err := loadContextEnv(a)
	if err != nil {
		return err
	}
	t := env.target(opts.global)
	removed, missing, err := env.store.Remove(ctx, t, paths)
	if err != nil {
		return err
	}
	for _, m := range missing {
		a.Warnf("Path '%s' is not in the %s context", m, t.Scope())
	}
	if opts.asJSON {
		j := editJSON(t)
		j.Removed, j.Missing = removed, missing
		return output.JSON(a.IO.Out, j)
	}
	a.Errorf("Removed %s from %s context.", plural(len(removed), "path", "paths"), t.Scope())
	return nil
}

// contextClearOptions are the flags of `context clear`.
type contextClearOptions struct {
	global bool
	yes    bool
	asJSON bool
}

func newContextClearCmd(a *app.App) *cobra.Command {
	opts := &contextClearOptions{}
	c := &cobra.Command{
		Use:   "clear [--global] [--yes]",
		Short: "Remove every path from the context",
		Long: `Remove every path from the active profile's context, or from the global context with --global.
On a terminal it asks first; elsewhere it needs --yes.

--json prints {scope, profile, cleared}.`,
		Example: `  qkit context clear
  qkit --profile backend context clear --yes
  qkit context clear --global --yes`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runContextClear(c.Context(), a, opts) },
	}
	c.Flags().BoolVarP(&opts.global, "global", "g", false, "clear the global context instead of the profile's")
	c.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {scope, profile, cleared}")
	return exposeChange(interruptible(c))
}

func runContextClear(ctx context.Context, a *app.App, opts *contextClearOptions) error {
	env, err := loadContextEnv(a)
	if err != nil {
		return err
	}
	t := env.target(opts.global)
	what := "global"
	if !t.Global {
		what = fmt.Sprintf("profile '%s'", t.Profile)
	}
	if !opts.yes {
		ok, err := a.Confirm(ctx, "--yes", fmt.Sprintf("Remove every path from the context for %s?", what))
		if err != nil {
			return err
		}
		if !ok {
			return output.Errorf(output.ExitRejected, "clear cancelled: the context for %s is unchanged", what)
		}
	}
	n, err := env.store.Clear(ctx, t)
	if err != nil {
		return err
	}
	if opts.asJSON {
		j := editJSON(t)
		j.Cleared = &n
		return output.JSON(a.IO.Out, j)
	}
	a.Errorf("Cleared context for %s", what)
	return nil
}
