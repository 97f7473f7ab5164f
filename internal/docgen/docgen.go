// Package docgen writes qkit's shell completions and man pages from the command tree. It lives
// outside the qkit binary (run it with `make docs`) so that the man-page renderer is not linked into
// every qkit start-up.
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is fixed so that the pages only change when the commands do.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Generate writes completions/qkit.{bash,zsh,fish,ps1} and man/*.1 under dir, replacing what
// is there.
func Generate(root *cobra.Command, dir string) error {
	root.DisableAutoGenTag = true
	// Execute adds these lazily; docs must list them whether or not the tree has run.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	compDir := filepath.Join(dir, "completions")
	manDir := filepath.Join(dir, "man")
	for _, d := range []string{compDir, manDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	gens := map[string]func(*bytes.Buffer) error{
		"qkit.bash": func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) },
		"qkit.zsh":  func(b *bytes.Buffer) error { return root.GenZshCompletion(b) },
		"qkit.fish": func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) },
		"qkit.ps1":  func(b *bytes.Buffer) error { return root.GenPowerShellCompletionWithDesc(b) },
	}
	for name, gen := range gens {
		var b bytes.Buffer
		if err := gen(&b); err != nil {
			return fmt.Errorf("completion %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(compDir, name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Title: "QKIT", Section: "1", Source: "qkit", Manual: "qkit manual", Date: &manDate}
	return doc.GenManTree(root, header, manDir)
}
