package cmd

import (
	"io"

	"github.com/qkit-cli/qkit/internal/output"
)

// printTable prints rows under a header: an aligned table when tty is set (renderTable: full.go,
// lite.go), as wide as the terminal at most, otherwise tab-separated lines without a header, which
// scripts cut and awk.
func printTable(w io.Writer, tty bool, header []string, rows [][]string) error {
	if !tty {
		return output.TSV(w, rows)
	}
	return renderTable(w, header, rows)
}
