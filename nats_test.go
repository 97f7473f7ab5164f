package main

import (
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/qkit-cli/qkit/internal/natstest"
)

// natsServers holds each script's NATS server with JetStream, a nats-server process of its own
// (internal/natstest; the qkit binary never links the server). Its data is under $WORK/nats, so a
// restart on the same port keeps the buckets.
var natsServers sync.Map // *testscript.TestScript -> *natstest.Server

// natsServerCmd: nats-server start [TOKEN] | restart | stop.
// start runs a server on a free loopback port (requiring TOKEN from clients when given) and sets
// NATS_URL; restart stops it and starts it again on the same port with the same data; the server
// stops with the script.
func natsServerCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || len(args) == 2 && args[0] != "start" {
		ts.Fatalf("usage: nats-server start [TOKEN] | restart | stop")
	}
	v, running := natsServers.Load(ts)
	switch args[0] {
	case "start":
		if running { // stopped before: again on its port, with its data
			ts.Check(v.(*natstest.Server).Up())
			return
		}
		opts := natstest.Options{JetStream: true, StoreDir: filepath.Join(ts.Getenv("WORK"), "nats")}
		if len(args) == 2 {
			opts.Token = args[1]
		}
		n, err := natstest.Start(opts)
		ts.Check(err)
		natsServers.Store(ts, n)
		ts.Defer(func() { n.Stop(); natsServers.Delete(ts) })
		ts.Setenv("NATS_URL", n.URL())
	case "restart", "stop":
		if !running {
			ts.Fatalf("nats-server: not started")
		}
		n := v.(*natstest.Server)
		if args[0] == "stop" {
			n.Stop()
			return
		}
		ts.Check(n.Restart())
	default:
		ts.Fatalf("usage: nats-server start|restart|stop")
	}
}
