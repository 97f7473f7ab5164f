package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsDoNotLinkTheWebPage: the ask_user_questions tool only points the person to a running
// page, and the questions core owns that record (questions.FindPage); the page's HTTP server stays
// out of the MCP server. This reads the package's real import graph; the test binary holds the
// package, so go test's cache reruns this whenever an import changes.
func TestToolsDoNotLinkTheWebPage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/qkit-cli/qkit/internal/mcpserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := "\n" + string(out)
	if !strings.Contains(deps, "\ngithub.com/qkit-cli/qkit/internal/questions\n") {
		t.Fatal("internal/mcpserver does not link the questions core: is this the right package?")
	}
	if strings.Contains(deps, "\ngithub.com/qkit-cli/qkit/internal/questionsweb\n") {
		t.Fatal("internal/mcpserver links internal/questionsweb; read the running page from the questions core (questions.FindPage)")
	}
}
