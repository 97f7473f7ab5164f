package questions

import (
	"os/exec"
	"strings"
	"testing"
)

// The NATS server is embedded in tests only: the qkit binary links the client, never the server
// (which would add megabytes). This reads the binary's real import graph.
func TestTheBinaryDoesNotLinkTheNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/qkit-cli/qkit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/nats-io/nats.go/jetstream\n") {
		t.Fatal("the binary does not link the NATS client: is this the right module?")
	}
	if strings.Contains(deps, "github.com/nats-io/nats-server") {
		t.Fatal("the qkit binary links github.com/nats-io/nats-server; keep it in _test.go files")
	}
}
