package cmd

import (
	"fmt"
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
	b.WriteString("\nMessages go to stderr as \"qkit: <message>\"; data goes to stdout.")
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and what they mean",
		Long:  b.String(),
	}
}
