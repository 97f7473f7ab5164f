//go:build !qkit_lite

package cmd

// The full build (no build tag): every command runs here. Installed as qkit-full beside the light
// qkit (forward.go), and what `go install` and the in-process tests build.

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/fullbin"
	"github.com/qkit-cli/qkit/internal/output/table"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
	"github.com/qkit-cli/qkit/internal/questions/natsstore"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

// lite is false: this is the full build.
const lite = false

// starting clears the mark a light qkit left in the environment as it handed this process the
// command line, so the processes this one starts (an agent that runs qkit again) do not inherit it.
func starting() { os.Unsetenv(fullbin.EnvForwarded) }

// forwardedCommand builds forwarded command name (forwardedHeads) itself.
func forwardedCommand(name string) func(*app.App) *cobra.Command {
	return map[string]func(*app.App) *cobra.Command{
		"mcp": newMCPCmd, "acp": newACPCmd, "sessions": newSessionsCmd, "doctor": newDoctorCmd,
	}[name]
}

// forwardToFull is never called in the full build (every call is behind lite).
func forwardToFull() error { return nil }

// renderTable prints an aligned table on a terminal.
func renderTable(w io.Writer, header []string, rows [][]string) error {
	return table.Render(w, header, rows)
}

// loadSchema reads and compiles ask's --schema.
func loadSchema(arg string, stdin io.Reader) (*structured.Schema, error) {
	return schema.Load(arg, stdin)
}

// sessionStore is qkit's session store in a's data folder.
func sessionStore(a *app.App) askrun.Store { return sessions.PathStore(sessionsPath(a)) }

// questionStores are the stores questions.store may name: all of them.
func questionStores() questions.Kinds {
	return questions.Kinds{"file": dirstore.Open, "nats": natsstore.Open}
}
