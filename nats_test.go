package main

import (
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rogpeppe/go-internal/testscript"
)

// embeddedNATS is one script's NATS server with JetStream, run inside the test process (a test-only
// dependency: the qkit binary never links the server). Its data is under $WORK/nats, so a restart on
// the same port keeps the buckets.
type embeddedNATS struct {
	mu    sync.Mutex
	srv   *server.Server
	port  int
	token string
}

var natsServers sync.Map // *testscript.TestScript -> *embeddedNATS

// natsServerCmd: nats-server start [TOKEN] | restart | stop.
// start runs a server on a free loopback port (requiring TOKEN from clients when given) and sets
// NATS_URL; restart stops it and starts it again on the same port with the same data; the server
// stops with the script.
func natsServerCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || len(args) == 2 && args[0] != "start" {
		ts.Fatalf("usage: nats-server start [TOKEN] | restart | stop")
	}
	v, loaded := natsServers.LoadOrStore(ts, &embeddedNATS{port: -1})
	n := v.(*embeddedNATS)
	if !loaded {
		ts.Defer(func() { n.stop(); natsServers.Delete(ts) })
	}
	switch args[0] {
	case "start":
		if len(args) == 2 {
			n.token = args[1]
		}
		n.start(ts)
		ts.Setenv("NATS_URL", "nats://127.0.0.1:"+strconv.Itoa(n.port))
	case "restart":
		n.stop()
		n.start(ts)
	case "stop":
		n.stop()
	default:
		ts.Fatalf("usage: nats-server start|restart|stop")
	}
}

func (n *embeddedNATS) start(ts *testscript.TestScript) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		ts.Fatalf("nats-server: already running")
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: filepath.Join(ts.Getenv("WORK"), "nats"),
		NoLog: true, NoSigs: true, Authorization: n.token,
	})
	ts.Check(err)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		ts.Fatalf("nats-server: did not start")
	}
	n.srv, n.port = srv, srv.Addr().(*net.TCPAddr).Port
}

func (n *embeddedNATS) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}
