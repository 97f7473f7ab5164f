package cmd

import "testing"

// TestDescribedCommandsAreCurrent: the internal_command description the full build serves without
// building the tree (cmd/internal_commands.txt) is the one the tree gives, and it is what a
// server's registry describes.
func TestDescribedCommandsAreCurrent(t *testing.T) {
	if describedCommands != DescribeInternalCommands() {
		t.Error("cmd/internal_commands.txt is out of date: run make docs (go run ./internal/docgen/gendocs -dir .)")
	}
	a, _, _ := testApp(t)
	if got := InternalRegistry(a).Describe(); got != describedCommands {
		t.Errorf("InternalRegistry(a).Describe() is not the generated text:\n%s", got)
	}
}
