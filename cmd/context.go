package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
)

func newContextCmd(a *app.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "context <command>",
		Short: "Manage the sticky context files sent with every prompt",
		Long: `Manage sticky context: files, folders and globs whose content is put before every prompt that
qkit sends to Q (qkit ask, ACP sessions), inside a "--- CONTEXT FILES BEGIN ---" block.

Rules live in two lists: a global one, used everywhere, and one per profile. The active profile is
"default" until you switch; the global --profile flag picks another for one command. Paths may be
globs ('docs/**/*.md'; ** recurses), may start with ~, and relative paths are resolved against the
working directory each time a prompt is built. A folder adds the files directly inside it.

What a repository's links can reach:
  - A relative rule of any kind (a file, a folder, a glob) takes nothing whose real path lies
    outside the working directory: AmazonQ.md -> ~/.ssh/id_rsa, or docs -> ~/.ssh with the rule
    docs/x.md or docs/**, in a cloned repository. Such a path is skipped with a warning, and add
    refuses it unless --force. A rule starting with .. is measured from where the .. lead.
  - A glob or folder rule also never follows a link out of its own folder.
  - An absolute or ~ path you typed is taken as given (links out of its folder are still not
    followed when it is a glob or a folder).
  - A hard link is the file itself, so it is taken like any other file. git never creates one, so
    a cloned repository cannot carry a hard link to your files.
  - Only regular files are read. Pseudo file systems (/proc, /sys, /dev and the like) are never
    walked. A walk stops after context.walk_max_files files and folders or context.walk_timeout,
    and its rules then take nothing, with a warning naming the rule and the limit.

Tokens are estimated as bytes/4. When the files exceed the setting context.max_tokens, the largest
are dropped first, with a warning; binary and non-UTF-8 files are never sent.`,
		Example: `  # Keep the project's docs and rules in every prompt
  qkit context add 'docs/**/*.md' AmazonQ.md
  qkit context add --global '~/notes/style.md'

  # See what would be sent, with token estimates
  qkit context show
  qkit context show --json | jq '.files[].path'

  # Keep a separate set of rules per project
  qkit context switch backend --create
  qkit --profile backend context show`,
		GroupID: groupCore,
		Args:    cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return qUsageError("Missing subcommand for qkit context. Try qkit context --help for available commands.")
			}
			return qUsageError("Unknown context subcommand: %s", args[0])
		},
	}
	c.SetFlagErrorFunc(func(sub *cobra.Command, err error) error {
		if opt, ok := unknownOption(err); ok && sub != c {
			return qUsageError("Unknown option for qkit context %s: %s", sub.Name(), opt)
		}
		return output.WithCode(output.ExitUsage, usageError{err})
	})
	c.AddCommand(
		newContextShowCmd(a), newContextPromptCmd(a),
		newContextAddCmd(a), newContextRmCmd(a), newContextClearCmd(a),
		newContextProfileCmd(a), newContextSwitchCmd(a),
	)
	return c
}

// qUsageError is a usage error (exit 2, usage line printed) carrying one of the messages Q's own
// /context prints, capitalised and punctuated as Q has them (scripts written for Q match them).
func qUsageError(format string, args ...any) error {
	return output.WithCode(output.ExitUsage, usageError{fmt.Errorf(format, args...)})
}

// unknownOption is the option pflag did not know (--x, or -x from -xyz), from its typed error.
func unknownOption(err error) (string, bool) {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return "", false
	}
	if ne.GetSpecifiedShortnames() != "" {
		return "-" + ne.GetSpecifiedName(), true
	}
	return "--" + ne.GetSpecifiedName(), true
}

// contextStore returns the store for a's configuration directory, its walks bounded by the settings
// context.walk_max_files and context.walk_timeout. Completion runs before the configuration is
// loaded, so the directory is then derived from the environment (and completion never walks).
func contextStore(a *app.App) (*contextfiles.Store, error) {
	if a.Config != nil {
		return newContextStore(a.Config), nil
	}
	p, err := config.ResolvePaths(nil)
	if err != nil {
		return nil, err
	}
	return contextfiles.NewStore(p.Config), nil
}

// newContextStore is the context store of cfg, with cfg's walk limits.
func newContextStore(cfg *config.Config) *contextfiles.Store {
	return contextfiles.NewStore(cfg.Paths.Config).WithWalkLimits(contextfiles.WalkLimits{
		MaxFiles: int(config.ContextWalkMaxFiles.Get(cfg)),
		Timeout:  config.ContextWalkTimeout.Get(cfg),
	})
}

// contextEnv is what every context command needs: the store, the profile chosen by --profile or the
// active one, and the working directory.
type contextEnv struct {
	store   *contextfiles.Store
	profile string
	cwd     string
}

func loadContextEnv(a *app.App) (*contextEnv, error) {
	s, err := contextStore(a)
	if err != nil {
		return nil, err
	}
	profile, err := s.ResolveProfile(a.ProfileFlag)
	if err != nil {
		return nil, err
	}
	cwd, err := a.WorkingDir()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	return &contextEnv{store: s, profile: profile, cwd: cwd}, nil
}

func (e *contextEnv) target(global bool) contextfiles.Target {
	return contextfiles.Target{Global: global, Profile: e.profile}
}

func warnAll(a *app.App, warnings []string) {
	for _, w := range warnings {
		a.Warnf("%s", w)
	}
}

// completeProfiles completes profile names; skip filters out names that make no sense here.
func completeProfiles(a *app.App, skip func(name, active string) bool) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		s, err := contextStore(a)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := s.Profiles()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		active, _ := s.Active()
		var out []string
		for _, n := range names {
			if skip != nil && skip(n, active) {
				continue
			}
			desc := "profile"
			if n == active {
				desc = "profile (active)"
			}
			out = append(out, n+"\t"+desc)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeProfileArg completes a profile name as the first positional argument only.
func completeProfileArg(a *app.App) cobra.CompletionFunc {
	all := completeProfiles(a, nil)
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return all(c, args, toComplete)
	}
}
