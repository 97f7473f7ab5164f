package natsstore

import (
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
)

// natsServer is a real NATS server with JetStream, a process of its own; its data lives in a
// temporary folder, so a restart on the same port keeps the buckets.
type natsServer struct {
	t *testing.T
	*natstest.Server
}

func startNATS(t *testing.T) *natsServer { return startNATSWith(t, true) }

func startNATSWith(t *testing.T, jetStream bool) *natsServer {
	t.Helper()
	srv, err := natstest.Start(natstest.Options{JetStream: jetStream, StoreDir: filepath.Join(t.TempDir(), "nats"), MaxPayload: 1 << 20})
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
func openNATS(t *testing.T, n *natsServer, installation string, opts questions.Options) *Store {
	t.Helper()
	s, err := New(Config{URL: n.URL(), Installation: installation, Retention: time.Hour, ReconnectWait: 50 * time.Millisecond}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// gate forwards TCP connections to a server while it is open. Shut, it closes what it carries and
// every connection that comes, so a client behind it stays away from the server for exactly as long
// as a test needs, whatever the client's reconnection timing.
type gate struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	shut  bool
	conns map[net.Conn]struct{}
}

// startGate opens a gate to the server n.
func startGate(t *testing.T, n *natsServer) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, to: "127.0.0.1:" + strconv.Itoa(n.Port()), conns: map[net.Conn]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if g.keep(c) {
				go g.carry(c)
			}
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); g.setShut(true) })
	return g
}

// URL is the gate's nats:// URL.
func (g *gate) URL() string { return "nats://" + g.ln.Addr().String() }

// setShut shuts the gate, closing what it carries, or opens it again.
func (g *gate) setShut(shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = shut
	if shut {
		for c := range g.conns {
			_ = c.Close()
		}
	}
}

// keep records c as carried, or closes it when the gate is shut.
func (g *gate) keep(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		_ = c.Close()
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) drop(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	_ = c.Close()
}

// carry copies between the client's connection c and one to the server until either side ends.
func (g *gate) carry(c net.Conn) {
	defer g.drop(c)
	s, err := net.DialTimeout("tcp", g.to, 5*time.Second)
	if err != nil || !g.keep(s) {
		if s != nil {
			_ = s.Close()
		}
		return
	}
	defer g.drop(s)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
}

// waitUntil waits (up to 30 s) until ok holds.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
