package cmd

// qkit is built twice from this tree. The default build is the whole of qkit; with the build tag
// qkit_lite it is the light `qkit` people run, which links none of the packages whose init costs
// every start (tablewriter, the MCP SDK with jsonschema-go and gob, modernc.org/sqlite) and hands
// what needs them to the full build, installed as qkit-full (internal/fullbin), by exec with the
// same command line. full.go and lite.go are the two sides; this file is what both compile.
//
// What the light binary hands over:
//   - whole top-level commands (forwardedHeads): their help, `qkit help X` and shell completion
//     below them too (forwardsWhole, decided on the command line before any tree is built);
//   - a command annotated annTableOnTTY whose output would be a table on a terminal (read-only
//     lists; piped or --json output stays light);
//   - a command run with a flag listed in annFullFlags (ask --schema, ask --session);
//   - a command that may open the questions store (annQuestionStore: questions and ask) when
//     questions.store names a store the light build does not link (NATS), decided once the
//     configuration is read;
//   - exec internal with --list, --request -, bare help, or a command (or its help) the light
//     registry does not have: a forwarded one, or an unknown one (execNeedsFull), and exec's
//     completion, which offers the commands of the whole tree.
// Each is decided before the command has any effect, so nothing is done twice.

import (
	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
)

// commandHead is what `qkit --help` and completion show of a top-level command.
type commandHead struct {
	Use, Short, GroupID string
}

// forwardedHeads are the top-level commands the light binary hands whole to qkit-full: the servers
// (the MCP SDK), sessions (SQLite) and doctor (it checks the NATS store). Both builds take their
// Use, Short and group from here, so `qkit --help` and completion are the same in both. The names
// are fullbin.Commands: the light binary's package early hands a command line starting with one
// of them over from its init, before most packages' init and before Main.
var forwardedHeads = map[string]commandHead{
	"mcp":      {"mcp <command>", "Serve qkit's tools over the Model Context Protocol", groupServe},
	"acp":      {"acp <command>", "Serve Q to editors over the Agent Client Protocol", groupServe},
	"sessions": {"sessions <command>", "List, show, export, import and remove conversations with the agent", groupCore},
	"doctor":   {"doctor", "Check why qkit would not work here, and say how to fix it", groupConfig},
}

// withHead gives c the head of forwarded command name.
func withHead(name string, c *cobra.Command) *cobra.Command {
	h := forwardedHeads[name]
	c.Use, c.Short, c.GroupID = h.Use, h.Short, h.GroupID
	return c
}

// forwardStub is the light binary's stand-in for forwarded command name: listed in help and
// completion as the real one, it hands anything that reaches it to qkit-full (a command line
// forwardsWhole could not place, such as one with a short global flag first).
func forwardStub(name string) *cobra.Command {
	run := func(*cobra.Command, []string) error { return forwardToFull() }
	return withHead(name, &cobra.Command{
		DisableFlagParsing: true,
		PersistentPreRunE:  run, // before the root's hook: no configuration is loaded here
		RunE:               run,
	})
}

// forwardsWhole reports whether the command line args is one the light binary hands to qkit-full
// whole: a forwarded command, its help (`help X`), or shell completion below it (`__complete X ...`).
func forwardsWhole(args []string) bool {
	if _, ok := forwardedHeads[commandNamed(args)]; ok {
		return true
	}
	i := firstWord(args)
	if i < 0 {
		return false
	}
	rest := args[i+1:]
	switch args[i] {
	case "help":
		_, ok := forwardedHeads[commandNamed(rest)]
		return ok
	case cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		// The last word is the one being completed: completing a command's name stays here.
		// exec internal completes the commands and flags of the whole tree; help a forwarded
		// command completes that command's subcommands, which only the whole tree has.
		if len(rest) > 0 {
			words := rest[:len(rest)-1]
			name := commandNamed(words)
			if j := firstWord(words); j >= 0 && words[j] == "help" {
				name = commandNamed(words[j+1:])
			}
			_, ok := forwardedHeads[name]
			return ok || name == "exec"
		}
	}
	return false
}

// annTableOnTTY marks a command whose output on a terminal is a table (output/table's
// tablewriter): the light binary hands it to qkit-full when stdout is a terminal and --json is not
// given. Only read-only commands carry it.
const annTableOnTTY = "qkit/table-on-tty"

func tableOnTTY(c *cobra.Command) *cobra.Command { return annotate(c, annTableOnTTY, "true") }

// annFullFlags lists, comma-separated, the flags with which the light binary hands the command to
// qkit-full (ask: --schema needs the JSON Schema validator, --session the session store).
const annFullFlags = "qkit/full-flags"

func fullFlags(c *cobra.Command, flags string) *cobra.Command {
	return annotate(c, annFullFlags, flags)
}

// annWarnsInRun marks a command that prints the configuration's warnings itself (exec internal):
// the command it runs prints them, and the light binary may still hand it over, so they are
// printed once, by what runs last.
const annWarnsInRun = "qkit/warns-in-run"

// annQuestionStore marks a command that may open the questions store (on it or a parent).
const annQuestionStore = "qkit/question-store"

func opensQuestionStore(c *cobra.Command) *cobra.Command {
	return annotate(c, annQuestionStore, "true")
}

// needsOtherStore reports whether c may open the questions store and this build lacks the one
// questions.store names.
func needsOtherStore(a *app.App, c *cobra.Command) bool {
	for p := c; p != nil; p = p.Parent() {
		if p.Annotations[annQuestionStore] != "" {
			return !storeLinked(a)
		}
	}
	return false
}

// storeLinked reports whether this build links the questions store questions.store names.
func storeLinked(a *app.App) bool {
	_, linked := questionStores()[config.QuestionsStore.Get(a.Config)]
	return linked
}

// needsFull reports whether the light binary must hand c, as parsed, to qkit-full.
func needsFull(a *app.App, c *cobra.Command) bool {
	if c.Annotations[annTableOnTTY] != "" && a.IO.StdoutTTY {
		if f := c.Flags().Lookup("json"); f == nil || f.Value.String() != "true" {
			return true
		}
	}
	for name := range flagSet(c.Annotations[annFullFlags]) {
		if c.Flags().Changed(name) {
			return true
		}
	}
	return false
}
