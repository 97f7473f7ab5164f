package cmd

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
)

// The limits every command's --help keeps, so that it can be read at a glance; details belong in
// a help topic (`qkit help <topic>`), which has no such limits.
const (
	// helpMaxColumns: no line wraps in a 100-column terminal, flag usages included, so each flag
	// is one line of the flag list and the eye can run down it.
	helpMaxColumns = 100
	// helpMaxLines: the whole --help, flags and examples included, fits about one screen. The
	// longest are the root, with its lists of commands and topics, and ask, with two dozen flags.
	helpMaxLines = 65
	// helpMaxProseLines: the Long text before the examples. Lists and tables count; doctor's
	// table of checks is the longest (ask's was 92 lines of prose before it was split).
	helpMaxProseLines = 30
	// helpMaxSentence: a sentence is at most two full lines.
	helpMaxSentence = 2 * helpMaxColumns
)

// sentenceEnd splits a Long text into sentences and list items: at a full stop, a blank line, or
// a line break before an indented line (an item of a list or table).
var sentenceEnd = regexp.MustCompile(`[.?!](\s|$)|\n\s*\n|\n +`)

// TestHelpIsScannable holds every command's --help to the limits above.
func TestHelpIsScannable(t *testing.T) {
	streams, _, _, _ := app.Test()
	root := NewRoot(app.New(streams, app.VersionInfo{}))
	root.InitDefaultHelpCmd()
	var help bytes.Buffer
	root.SetOut(&help)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.IsAdditionalHelpTopicCommand() {
			return // a topic holds the details
		}
		name := c.CommandPath()
		help.Reset()
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(help.String(), "\n"), "\n")
		if len(lines) > helpMaxLines {
			t.Errorf("%s --help: %d lines, more than %d: move details to a help topic", name, len(lines), helpMaxLines)
		}
		for _, l := range lines {
			if n := len([]rune(l)); n > helpMaxColumns {
				t.Errorf("%s --help: a line of %d columns, more than %d:\n%s", name, n, helpMaxColumns, l)
			}
		}
		if n := strings.Count(strings.TrimSpace(c.Long), "\n") + 1; n > helpMaxProseLines {
			t.Errorf("%s: Long is %d lines, more than %d: move details to a help topic", name, n, helpMaxProseLines)
		}
		for _, s := range sentenceEnd.Split(c.Long, -1) {
			if s = strings.Join(strings.Fields(s), " "); len(s) > helpMaxSentence {
				t.Errorf("%s: a sentence of %d characters, more than %d:\n%s", name, len(s), helpMaxSentence, s)
			}
		}
	}
	walk(root)
}
