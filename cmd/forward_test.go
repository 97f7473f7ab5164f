package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/fullbin"
)

// TestForwardsWhole: the command lines the light binary hands to qkit-full before building any
// tree: a forwarded command, its help, completion below it (and below exec); not the rest.
func TestForwardsWhole(t *testing.T) {
	for line, want := range map[string]bool{
		"sessions list":                 true,
		"--profile work mcp serve":      true,
		"--config=c.yaml acp serve":     true,
		"doctor --json":                 true,
		"help sessions":                 true,
		"help sessions list":            true,
		"__complete sessions ":          true,
		"__complete mcp serve --":       true,
		"__completeNoDesc doctor --":    true,
		"__complete exec internal ":     true,
		"version":                       false,
		"ask --dry-run hi":              false,
		"help":                          false,
		"help ask":                      false,
		"__complete ":                   false,
		"__complete sess":               false, // the command's own name: listed by the light tree
		"__complete --profile ":         false,
		"context show sessions":         false,
		"settings get sessions.enabled": false,
	} {
		if got := forwardsWhole(strings.Split(line, " ")); got != want {
			t.Errorf("forwardsWhole(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestForwardedHeadsAreTheCommands: the light binary's stubs show what the commands they stand
// for show in help and completion (both builds take the head from forwardedHeads), and every
// command the full build has for a forwarded name is there.
func TestForwardedHeadsAreTheCommands(t *testing.T) {
	streams, _, _, _ := app.Test()
	root := NewRoot(app.New(streams, app.VersionInfo{}))
	for name, h := range forwardedHeads {
		c, _, err := root.Find([]string{name})
		if err != nil || c == root {
			t.Fatalf("%s: not in the tree: %v", name, err)
		}
		stub := forwardStub(name)
		if c.Use != h.Use || c.Short != h.Short || c.GroupID != h.GroupID || stub.Use != c.Use || stub.Short != c.Short ||
			stub.GroupID != c.GroupID || len(c.Aliases) != len(stub.Aliases) {
			t.Errorf("%s: the stub (%q, %q, %q) is not the command (%q, %q, %q)", name, stub.Use, stub.Short, stub.GroupID, c.Use, c.Short, c.GroupID)
		}
	}
}

// TestTableCommandsAreAnnotated: each command that prints a table on a terminal is one the light
// binary hands over on a terminal (annTableOnTTY), or is forwarded whole, or is exec internal
// (--list, forwarded by execNeedsFull).
func TestTableCommandsAreAnnotated(t *testing.T) {
	streams, _, _, _ := app.Test()
	root := NewRoot(app.New(streams, app.VersionInfo{}))
	for _, path := range []string{"settings list", "questions list"} {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || c.Annotations[annTableOnTTY] == "" {
			t.Errorf("%s: prints a table and is not annotated annTableOnTTY", path)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[annTableOnTTY] != "" && c.Flags().Lookup("json") == nil {
			t.Errorf("%s: annTableOnTTY without --json: the light binary could never print it on a terminal", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestForwardedHeadsAreFullbinsCommands: the commands package early hands over from its init
// (fullbin.Commands) are the ones forwardsWhole hands over, each with its head.
func TestForwardedHeadsAreFullbinsCommands(t *testing.T) {
	if len(fullbin.Commands) != len(forwardedHeads) {
		t.Errorf("fullbin.Commands %q, forwardedHeads has %d", fullbin.Commands, len(forwardedHeads))
	}
	for _, name := range fullbin.Commands {
		if _, ok := forwardedHeads[name]; !ok {
			t.Errorf("%s is in fullbin.Commands and not in forwardedHeads", name)
		}
	}
}
