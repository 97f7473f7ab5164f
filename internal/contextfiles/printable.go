package contextfiles

import "github.com/qkit-cli/qkit/internal/termtext"

// Printable is a file name or a message about one made safe to show on a terminal: names come from
// a repository, and one that holds an escape sequence, a line break or a bidi override could move
// the cursor, forge a line of output or reorder what a person reads. It is termtext.VisibleLine
// (the one filter for untrusted text): messages for people (the warnings) and the paths
// `context show` prints go through it; --json keeps paths as they are.
func Printable(s string) string { return termtext.VisibleLine(s) }

// printableAll applies Printable to each message.
func printableAll(msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = Printable(m)
	}
	return msgs
}
