package questions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The NATS server is embedded in tests only: the qkit binary links the client, never the server
// (which would add megabytes). This reads the binary's real import graph.
func TestTheBinaryDoesNotLinkTheNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	// Each line is an import path, then the folder for the module's own packages.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{with .Module}}{{if .Main}} {{$.Dir}}{{end}}{{end}}", "github.com/qkit-cli/qkit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// go test caches a result until the test binary or the files the test opened change: reading
	// the folders of the binary's own packages (and go.mod) reruns it when any of them is edited.
	var deps strings.Builder
	dirs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, own := strings.Cut(line, " ")
		deps.WriteString(path + "\n")
		if !own {
			continue
		}
		if _, err := os.ReadDir(dir); err != nil {
			t.Fatal(err)
		}
		dirs++
		if path == "github.com/qkit-cli/qkit" {
			if _, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dirs == 0 {
		t.Fatalf("go list -deps gave no folders of qkit's own packages:\n%s", out)
	}
	if !strings.Contains(deps.String(), "github.com/nats-io/nats.go/jetstream\n") {
		t.Fatal("the binary does not link the NATS client: is this the right module?")
	}
	if strings.Contains(deps.String(), "github.com/nats-io/nats-server") {
		t.Fatal("the qkit binary links github.com/nats-io/nats-server; keep it in _test.go files")
	}
}
