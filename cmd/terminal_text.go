package cmd

import (
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// onScreen is text from outside qkit (a repository's files, a setting's value) as stdout may carry
// it: on a terminal through termtext.Visible, so an escape sequence is shown rather than obeyed
// (newlines and tabs kept); piped, exactly as it is, since a script or a file wants the real text
// (the prompt as sent, the value as stored).
func onScreen(a *app.App, s string) string {
	if a.IO.StdoutTTY {
		return termtext.Visible(s)
	}
	return s
}

// onScreenLine is onScreen for text that must stay on one line (a table cell, a bare value):
// newline and tab are escaped too on a terminal.
func onScreenLine(a *app.App, s string) string {
	if a.IO.StdoutTTY {
		return termtext.VisibleLine(s)
	}
	return s
}
