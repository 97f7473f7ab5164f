// Package natstest runs a real NATS server with JetStream inside a test process, for the tests of
// the NATS questions store (internal/questions, internal/mcpserver and the testscripts). Only
// _test.go files import it, so the qkit binary never links the server
// (TestTheBinaryDoesNotLinkTheNATSServer checks).
package natstest

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is one embedded server. Its data lives in the options' StoreDir, so a Restart on the same
// port keeps the buckets.
type Server struct {
	mu   sync.Mutex
	opts server.Options // as given; each start takes a copy
	srv  *server.Server
	port int
}

// Start starts a server with opts on 127.0.0.1 (on a free port unless opts.Port names one), with
// NoLog and NoSigs; it is ready for connections when Start returns.
func Start(opts server.Options) (*Server, error) {
	opts.Host, opts.NoLog, opts.NoSigs = "127.0.0.1", true, true
	if opts.Port == 0 {
		opts.Port = -1
	}
	s := &Server{opts: opts, port: opts.Port}
	return s, s.start()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("nats-server: already running")
	}
	// A restart on the same port can find it not yet free (the new server then never gets ready),
	// and JetStream's recovery of the store is slow on a loaded machine: short tries, many of them.
	for try := 1; ; try++ {
		o := s.opts
		o.Port = s.port
		srv, err := server.NewServer(&o)
		if err != nil {
			return err
		}
		go srv.Start()
		if srv.ReadyForConnections(2 * time.Second) {
			s.srv, s.port = srv, srv.Addr().(*net.TCPAddr).Port
			return nil
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		if try == 15 {
			return errors.New("the embedded NATS server did not start")
		}
	}
}

// Stop shuts the server down and waits until it is down (idempotent).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart stops the server and starts it again on the same port with the same data.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Up starts a stopped server again on the same port with the same data; it fails when the server
// runs.
func (s *Server) Up() error { return s.start() }

// Port is the port the server listens on (kept across restarts).
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// URL is the server's nats:// URL on loopback.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port()) }
