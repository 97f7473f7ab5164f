package questions

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/qkit-cli/qkit/internal/natstest"
)

// natsServer is a real NATS server with JetStream, embedded in the test process; its data lives in a
// temporary folder, so a restart on the same port keeps the buckets.
type natsServer struct {
	t *testing.T
	*natstest.Server
}

func startNATS(t *testing.T) *natsServer { return startNATSWith(t, true) }

func startNATSWith(t *testing.T, jetStream bool) *natsServer {
	t.Helper()
	srv, err := natstest.Start(server.Options{JetStream: jetStream, StoreDir: filepath.Join(t.TempDir(), "nats"), MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &natsServer{t: t, Server: srv}
}

// stop shuts the server down (idempotent).
func (n *natsServer) stop() { n.Stop() }

// up starts the stopped server again on the same port with the same data.
func (n *natsServer) up() {
	n.t.Helper()
	if err := n.Up(); err != nil {
		n.t.Fatal(err)
	}
}

// restart stops the server and starts it again on the same port with the same data.
func (n *natsServer) restart() {
	n.t.Helper()
	if err := n.Restart(); err != nil {
		n.t.Fatal(err)
	}
}

// openNATS opens a store on the server's bucket for installation; each call is another "machine".
func openNATS(t *testing.T, n *natsServer, installation string, opts Options) *NATSStore {
	t.Helper()
	s, err := NewNATSStore(NATSConfig{URL: n.URL(), Installation: installation, Retention: time.Hour, ReconnectWait: 50 * time.Millisecond}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
