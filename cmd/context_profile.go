package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/output"
)

// contextProfileOptions are the flags of `context profile`.
type contextProfileOptions struct {
	create string
	delete string
	rename string
	asJSON bool
	// set reports whether a flag was given (an empty --create '' is still an attempt to create).
	set func(name string) bool
}

// profileJSON is one row of `context profile --json`.
type profileJSON struct {
	Name   string `json:"name"`
	Active bool   `json:"active"`
}

func newContextProfileCmd(a *app.App) *cobra.Command {
	opts := &contextProfileOptions{}
	c := &cobra.Command{
		Use:   "profile [--create NAME | --delete NAME | --rename OLD NEW]",
		Short: "List, create, delete or rename context profiles",
		Long: `With no flag, list the profiles, the active one marked with *. With one of --create, --delete or
--rename, change them (only one at a time).

Profile names start with a letter or digit and hold only letters, digits, - and _ (at most 64
characters). "default" always exists and cannot be deleted or renamed, nor be a new name; the active
profile cannot be deleted. Renaming the active profile keeps it active.

--json (listing) prints [{name, active}].`,
		Example: `  qkit context profile
  qkit context profile --create backend
  qkit context profile --rename backend api
  qkit context profile --delete api`,
		Args: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("rename") {
				if len(args) != 1 {
					return output.WithCode(output.ExitUsage, usageError{fmt.Errorf("--rename needs the old name and the new one: --rename OLD NEW")})
				}
				return nil
			}
			if len(args) > 0 {
				return output.WithCode(output.ExitUsage, usageError{fmt.Errorf("unexpected argument %q", args[0])})
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.set = c.Flags().Changed
			return runContextProfile(a, opts, args)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.create, "create", "", "create the profile `NAME` (empty)")
	f.StringVar(&opts.delete, "delete", "", "delete the profile `NAME`")
	f.StringVar(&opts.rename, "rename", "", "rename the profile `OLD` to the name given as argument")
	f.BoolVar(&opts.asJSON, "json", false, "print JSON when listing: [{name, active}]")
	_ = c.RegisterFlagCompletionFunc("delete", completeProfiles(a, func(name, active string) bool {
		return name == "default" || name == active
	}))
	_ = c.RegisterFlagCompletionFunc("rename", completeProfiles(a, func(name, _ string) bool { return name == "default" }))
	_ = c.RegisterFlagCompletionFunc("create", cobra.NoFileCompletions)
	return changeFlags(exposeRead(c), "create,delete,rename")
}

func runContextProfile(a *app.App, opts *contextProfileOptions, args []string) error {
	s, err := contextStore(a)
	if err != nil {
		return err
	}
	n := 0
	for _, f := range []string{"create", "delete", "rename"} {
		if opts.set(f) {
			n++
		}
	}
	if n > 1 {
		return qUsageError("Only one of --delete, --create, or --rename can be specified")
	}
	switch {
	case opts.set("create"):
		if err := s.CreateProfile(opts.create); err != nil {
			return err
		}
		a.Errorf("Created profile '%s'", opts.create)
		return nil
	case opts.set("delete"):
		if err := s.DeleteProfile(opts.delete); err != nil {
			return err
		}
		a.Errorf("Deleted profile '%s'", opts.delete)
		return nil
	case opts.set("rename"):
		if err := s.RenameProfile(opts.rename, args[0]); err != nil {
			return err
		}
		a.Errorf("Renamed profile '%s' to '%s'", opts.rename, args[0])
		return nil
	}
	names, err := s.Profiles()
	if err != nil {
		return err
	}
	active, err := s.Active()
	if err != nil {
		return err
	}
	if opts.asJSON {
		rows := make([]profileJSON, len(names))
		for i, n := range names {
			rows[i] = profileJSON{Name: n, Active: n == active}
		}
		return output.JSON(a.IO.Out, rows)
	}
	var b strings.Builder
	for _, n := range names {
		mark := " "
		if n == active {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, n)
	}
	_, err = fmt.Fprint(a.IO.Out, b.String())
	return err
}

// contextSwitchOptions are the flags of `context switch`.
type contextSwitchOptions struct {
	create bool
	asJSON bool
}

// contextSwitchJSON is the output of `context switch --json`.
type contextSwitchJSON struct {
	Profile  string `json:"profile"`
	Previous string `json:"previous"`
	Created  bool   `json:"created"`
}

func newContextSwitchCmd(a *app.App) *cobra.Command {
	opts := &contextSwitchOptions{}
	c := &cobra.Command{
		Use:   "switch <name> [--create]",
		Short: "Make a profile the active one",
		Long: `Make NAME the active profile: its rules are used (with the global ones) by every later command
that has no --profile flag. With --create, a profile that does not exist yet is created first.

--json prints {profile, previous, created}: the profile now active, the one active before, and
whether this command created it.`,
		Example: `  qkit context switch backend
  qkit context switch experiments --create
  qkit context switch default --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeProfileArg(a),
		RunE:              func(_ *cobra.Command, args []string) error { return runContextSwitch(a, opts, args[0]) },
	}
	c.Flags().BoolVarP(&opts.create, "create", "c", false, "create the profile if it does not exist")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {profile, previous, created}")
	return exposeChange(c)
}

func runContextSwitch(a *app.App, opts *contextSwitchOptions, name string) error {
	s, err := contextStore(a)
	if err != nil {
		return err
	}
	previous, _ := s.Active() // a damaged active file is what switch repairs: previous is then ""
	created, err := s.Switch(name, opts.create)
	if err != nil {
		return err
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, contextSwitchJSON{Profile: name, Previous: previous, Created: created})
	}
	if created {
		a.Errorf("Created and switched to profile '%s'", name)
	} else {
		a.Errorf("Switched to profile '%s'", name)
	}
	return nil
}
