// Package docgen writes qkit's shell completions and man pages from the command tree. It lives
// outside the qkit binary (run it with `make docs`) so that the man-page renderer is not linked into
// every qkit start-up.
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Generate writes completions/qkit.{bash,zsh,fish,ps1} and man/*.1 under dir, replacing what
// is there. Each man page is titled after its command (QKIT-CONTEXT-ADD) and dated date, the
// build's date (see BuildDate).
func Generate(root *cobra.Command, dir string, date time.Time) error {
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
	return genManTree(root, manHeader{section: "1", source: "qkit", manual: "qkit manual", date: date}, manDir)
}

// BuildDate is the date man pages carry: SOURCE_DATE_EPOCH when set (reproducible builds), else
// the date of the commit being built, else today.
func BuildDate() (time.Time, error) {
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		secs, err := strconv.ParseInt(strings.TrimSpace(epoch), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: %w", epoch, err)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	if out, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
		if secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			return time.Unix(secs, 0).UTC(), nil
		}
	}
	return time.Now().UTC(), nil
}
