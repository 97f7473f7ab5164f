//go:build qkit_lite

package cmd

// The light build (go build -tags qkit_lite): the `qkit` people run. It hands what needs a heavy
// package to qkit-full (forward.go says what and why).

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/fullbin"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/structured"
)

// lite is true: this is the light build.
const lite = true

func starting() {}

// forwardedCommand is forwarded command name's stub.
func forwardedCommand(name string) func(*app.App) *cobra.Command {
	return func(*app.App) *cobra.Command { return forwardStub(name) }
}

// forwardToFull replaces this process with qkit-full running the same command line; it returns
// only the error of a helper that cannot be run (exit 1, naming where it was looked for).
func forwardToFull() error {
	return output.WithCode(output.ExitFailure, fullbin.Exec(os.Args[1:]))
}

// renderTable is never reached: a command whose output is a table on a terminal is annotated
// annTableOnTTY and handed over before it runs. Should one be missed, it is handed over here
// (the commands that print tables only read).
func renderTable(io.Writer, []string, [][]string) error { return forwardToFull() }

// loadSchema is never reached: ask --schema is handed over (annFullFlags).
func loadSchema(string, io.Reader) (*structured.Schema, error) {
	return nil, errors.New("--schema is checked by qkit-full")
}

// sessionStore spools ask's sessions for the store to take in when it next opens (the light build
// links no SQLite; ask --session, which reads the store, is handed over).
func sessionStore(a *app.App) askrun.Store {
	return sessionrec.Spool{Dir: sessionrec.SpoolDir(a.Config.Paths.Data)}
}

// questionStores are the stores the light build links: the file store. A command that may open
// the store is handed to qkit-full when questions.store names another (needsOtherStore).
func questionStores() questions.Kinds {
	return questions.Kinds{"file": dirstore.Open}
}

// describedCommands is empty: the light build serves no MCP tools (Describe builds the text).
const describedCommands = ""
