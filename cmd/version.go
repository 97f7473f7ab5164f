package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/output"
)

// Set by the linker: -X github.com/qkit-cli/qkit/cmd.version=... (see the Makefile).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func buildVersion() app.VersionInfo {
	v := app.VersionInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if v.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					v.Commit = s.Value
				case "vcs.time":
					if v.Date == "" {
						v.Date = s.Value
					}
				}
			}
		}
	}
	return v
}

// versionOptions are the flags of `version`.
type versionOptions struct{ asJSON bool }

func newVersionCmd(a *app.App) *cobra.Command {
	opts := &versionOptions{}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print qkit's version, commit, build date and Go version",
		Long:  "Print the version qkit was built as, the commit and date it was built from, and the Go version.",
		Example: `  qkit version
  qkit version --json | jq -r .version`,
		Args:    cobra.NoArgs,
		GroupID: groupConfig,
		RunE:    func(*cobra.Command, []string) error { return runVersion(a, opts) },
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print {version, commit, date, go} as JSON")
	return exposeRead(c)
}

func runVersion(a *app.App, opts *versionOptions) error {
	if opts.asJSON {
		return output.JSON(a.IO.Out, a.Version)
	}
	_, err := fmt.Fprintln(a.IO.Out, versionLine(a.Version))
	return err
}

// versionLine is what `qkit version` and `qkit --version` print: the version, the commit and build
// date when known, and the Go version.
func versionLine(v app.VersionInfo) string {
	line := "qkit " + v.Version
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		line += " (commit " + c
		if v.Date != "" {
			line += ", built " + v.Date
		}
		line += ")"
	}
	return line + " " + v.Go
}
