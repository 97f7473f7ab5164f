package cmd

import (
	"embed"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/output"
)

// newExitCodesTopic is the `qkit help exit-codes` topic, generated from the one table in
// internal/output.
func newExitCodesTopic() *cobra.Command {
	var b strings.Builder
	b.WriteString("qkit exits with one of these codes; scripts can rely on them.\n\n")
	for _, e := range output.ExitCodes {
		fmt.Fprintf(&b, "  %3d  %s\n", e.Code, e.Meaning)
	}
	b.WriteString("\nA command stopped by a signal exits 128 + the signal's number, as a shell reports it: 129 SIGHUP,\n" +
		"130 SIGINT, 131 SIGQUIT, 143 SIGTERM. A command that was not waiting on anything may end at once\n" +
		"instead, and the shell then reports the same number.\n")
	b.WriteString("\nMessages go to stderr as \"qkit: <message>\"; data goes to stdout.")
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and what they mean",
		Long:  b.String(),
	}
}

// topicFiles are the help topics beyond exit-codes: the details the README points to. Each file's
// first line is the topic's one-line summary (its title when printed); its text follows a blank line.
//
//go:embed topics/*.txt
var topicFiles embed.FS

// newTopics builds a help topic (`qkit help <name>`) from each file in topics/.
func newTopics() []*cobra.Command {
	entries, err := topicFiles.ReadDir("topics")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	var out []*cobra.Command
	for _, e := range entries {
		data, err := topicFiles.ReadFile(path.Join("topics", e.Name()))
		if err != nil {
			panic(err)
		}
		short, _, _ := strings.Cut(string(data), "\n\n")
		out = append(out, &cobra.Command{
			Use:   strings.TrimSuffix(e.Name(), ".txt"),
			Short: strings.TrimSpace(short),
			Long:  strings.TrimRight(string(data), "\n"), // the summary is its title
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// newHelpCmd replaces cobra's help command, which prints the root's help and exits 0 for a topic
// that does not exist. Here an unknown topic is a usage error (exit 2) with suggestions, and
// completion offers the help topics (exit-codes) too.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Print the help of any command or help topic, with its examples.",
		Example: `  qkit help context add
  qkit help exit-codes`,
		GroupID: groupConfig,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			parent, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, sub := range parent.Commands() {
				if (sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() || sub == c) && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return unknownCommand(target, rest)
			}
			return target.Help()
		},
	}
}

// unknownCommand is the usage error for a name that is not a subcommand of parent, with the
// nearest names as a hint.
func unknownCommand(parent *cobra.Command, args []string) error {
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, parent.CommandPath())
	if parent.SuggestionsMinimumDistance <= 0 {
		parent.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
	}
	if s := parent.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return output.WithCode(output.ExitUsage, usageError{errors.New(msg)})
}
