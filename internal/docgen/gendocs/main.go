// Command gendocs writes completions/ and man/ for qkit, and cmd/internal_commands.txt (the
// internal_command MCP tool's description, which the full build embeds): go run
// ./internal/docgen/gendocs [-dir DIR]. The man pages are dated SOURCE_DATE_EPOCH, or the date of
// the current commit.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/docgen"
)

func main() {
	dir := flag.String("dir", ".", "write completions/ and man/ under `DIR`")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// run writes everything under dir, creating the folders it needs: make install passes a fresh
// bin/docs, where no cmd/ exists.
func run(dir string) error {
	date, err := docgen.BuildDate()
	if err != nil {
		return err
	}
	streams, _, _, _ := app.Test()
	if err := docgen.Generate(cmd.NewRoot(app.New(streams, app.VersionInfo{})), dir, date); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "cmd"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cmd", "internal_commands.txt"), []byte(cmd.DescribeInternalCommands()), 0o644)
}
