package agent

import (
	"slices"
	"testing"
)

// TestTrustHint: the hint names the whole --trust-tools value to pass: what the run trusted (comma
// lists too, without duplicates and without the bare names of the MCP tools it now names in full),
// then the tools that were missing.
func TestTrustHint(t *testing.T) {
	for _, c := range []struct {
		trusted, names, want []string
	}{
		{nil, []string{"shell"}, []string{"shell"}},
		{[]string{"fs_read"}, []string{"shell"}, []string{"fs_read", "shell"}},
		{[]string{"fs_read,status", " FS_READ ", ""}, []string{"@git/status", "shell"}, []string{"fs_read", "@git/status", "shell"}},
		{[]string{"shell"}, []string{"Shell"}, []string{"shell"}},
		{[]string{"git/status"}, []string{"@git/status", "shell"}, []string{"@git/status", "shell"}},
	} {
		if got := MergeTrust(c.trusted, c.names); !slices.Equal(got, c.want) {
			t.Errorf("MergeTrust(%q, %q) = %q, want %q", c.trusted, c.names, got, c.want)
		}
	}
	e := &UntrustedToolError{Command: "kiro-cli", Denied: true, Tools: []ToolCall{{Name: "status", Server: "git"}}, Trusted: []string{"fs_read,status"}}
	if got, want := e.Hint(CLITrustFlags), "to allow it, run again with --trust-tools fs_read,@git/status (or --yolo to trust every tool)"; got != want {
		t.Errorf("hint %q, want %q", got, want)
	}
	if got, want := TrustHint([]string{"fs_read"}, nil, CLITrustFlags), "to allow it, run again with --yolo (the agent did not say which tool it wanted)"; got != want {
		t.Errorf("hint without names %q, want %q", got, want)
	}
}

// TestTrustList: what goes to the agent's --trust-tools; server/tool is an MCP tool's @server/tool.
func TestTrustList(t *testing.T) {
	got := TrustList([]string{"fs_read, git/status", "", "@github/*,github/*", " shell "})
	if want := []string{"fs_read", "@git/status", "@github/*", "@github/*", "shell"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if argv := Argv(Limits{Command: "kiro-cli"}, Request{Prompt: "p", TrustTools: []string{"git/status"}}); !slices.Contains(argv, "--trust-tools=@git/status") {
		t.Errorf("argv %q", argv)
	}
}
