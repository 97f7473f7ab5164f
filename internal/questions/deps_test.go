package questions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The qkit binary links the NATS client, never the server (which would add megabytes; the tests
// run it as a process of their own, see TestNoPackageImportsTheNATSServer). This reads the
// binary's real import graph.
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
		t.Fatal("the qkit binary links github.com/nats-io/nats-server")
	}
}

// TestNoPackageImportsTheNATSServer: the tests run the NATS server as a process of its own
// (internal/natstest runs the nats-server tool from go.mod), so no package of the module, test files
// included, imports the server's Go package: it is one of the largest compiles of the build, and a
// test binary that linked it would compile it again for the race pass, vet and staticcheck would
// analyse it, and the race detector would watch its goroutines. This reads the real import graph
// of every package with its tests.
func TestNoPackageImportsTheNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}{{with .Module}}{{if .Main}}\t{{$.Dir}}{{end}}{{end}}", "github.com/qkit-cli/qkit/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	natstest := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, own := strings.Cut(line, "\t")
		if own { // as above: reading qkit's own folders reruns a cached result when one is edited
			if _, err := os.ReadDir(dir); err != nil {
				t.Fatal(err)
			}
		}
		natstest = natstest || path == "github.com/qkit-cli/qkit/internal/natstest"
		if strings.HasPrefix(path, "github.com/nats-io/nats-server/") {
			t.Fatalf("a package of the module imports %s; run the server with internal/natstest", path)
		}
	}
	if !natstest {
		t.Fatalf("no test imports internal/natstest: is this the right module?\n%s", out)
	}
}

// TestTheCoreLinksNoStore: the core and the file store do not link the NATS client, so a binary
// that wires in the file store alone (questions.Kinds{"file": dirstore.Open}) stays without it; the
// NATS store is linked only where natsstore.Open is wired in (cmd's questionStores). This reads the
// packages' real import graph.
func TestTheCoreLinksNoStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"github.com/qkit-cli/qkit/internal/questions", "github.com/qkit-cli/qkit/internal/questions/dirstore"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{with .Module}}{{if .Main}} {{$.Dir}}{{end}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		// As above: reading qkit's own folders reruns a cached result when one of them is edited.
		var paths strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			path, dir, own := strings.Cut(line, " ")
			paths.WriteString(path + "\n")
			if own {
				if _, err := os.ReadDir(dir); err != nil {
					t.Fatal(err)
				}
			}
		}
		out = []byte(paths.String())
		deps := "\n" + string(out)
		if !strings.Contains(deps, "\ngithub.com/qkit-cli/qkit/internal/config\n") {
			t.Fatalf("%s does not link internal/config: is this the right package?\n%s", pkg, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "github.com/nats-io/") || strings.HasSuffix(line, "/questions/natsstore") {
				t.Errorf("%s links %s; the NATS store is linked only where natsstore.Open is wired in", pkg, line)
			}
		}
	}
}
