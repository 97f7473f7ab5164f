package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/app"
)

// TestUsageErrorsAreTyped: every way a command line can be wrong exits 2 with the usage line, and
// an ordinary failure whose text happens to read like one of cobra's messages does not (the exit
// code comes from where the error was made, not from matching its words).
func TestUsageErrorsAreTyped(t *testing.T) {
	home := t.TempDir()
	t.Setenv("QKIT_HOME", home)
	run := func(args ...string) (int, string) {
		t.Helper()
		streams, _, _, errOut := app.Test()
		code := Run(context.Background(), app.New(streams, app.VersionInfo{}), args)
		return code, errOut.String()
	}
	for _, args := range [][]string{
		{"bogus"},                                         // unknown command
		{"settings", "bogus"},                             // unknown subcommand
		{"settings", "list", "--bogus"},                   // unknown flag
		{"settings", "list", "-z"},                        // unknown shorthand
		{"--no-input=maybe", "version"},                   // a flag value that does not parse
		{"settings", "get"},                               // too few arguments
		{"settings", "get", "a", "b"},                     // too many
		{"version", "extra"},                              // none allowed
		{"exec", "internal", "--list", "--request", "{}"}, // flags that exclude each other
		{"settings", "list", "--config"},                  // a flag without its value
	} {
		code, stderr := run(args...)
		if code != 2 || !strings.Contains(stderr, "Usage: ") {
			t.Errorf("%q: exit %d, want 2 with the usage line; stderr:\n%s", args, code, stderr)
		}
	}
	// A config file whose name reads like cobra's "requires exactly" message: its YAML error is a
	// failure (exit 1), not a usage error.
	bad := filepath.Join(home, "requires exactly 1 arg.yaml")
	if err := os.WriteFile(bad, []byte("agent: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := run("--config", bad, "settings", "list"); code != 1 || strings.Contains(stderr, "Usage: ") {
		t.Errorf("a broken config file: exit %d, want 1 without a usage line; stderr:\n%s", code, stderr)
	}
}
