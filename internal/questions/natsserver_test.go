package questions

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServer is a real NATS server with JetStream, embedded in the test process; its data lives in a
// temporary folder, so a restart on the same port keeps the buckets.
type natsServer struct {
	t    *testing.T
	dir  string
	port int
	js   bool
	srv  *server.Server
}

func startNATS(t *testing.T) *natsServer { return startNATSWith(t, true) }

func startNATSWith(t *testing.T, jetStream bool) *natsServer {
	t.Helper()
	n := &natsServer{t: t, dir: filepath.Join(t.TempDir(), "nats"), port: -1, js: jetStream}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: n.port, JetStream: n.js, StoreDir: n.dir,
		NoLog: true, NoSigs: true, MaxPayload: 1 << 20,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("the embedded NATS server did not start")
	}
	n.srv = srv
	n.port = srv.Addr().(*net.TCPAddr).Port
}

// stop shuts the server down (idempotent).
func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

// restart stops the server and starts it again on the same port with the same data.
func (n *natsServer) restart() {
	n.t.Helper()
	n.stop()
	n.start()
}

func (n *natsServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

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
