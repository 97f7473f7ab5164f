// Package natstest runs a real NATS server with JetStream inside a test process, for the tests of
// the NATS questions store (internal/questions, internal/mcpserver and the testscripts). Only
// _test.go files import it, so the qkit binary never links the server
// (TestTheBinaryDoesNotLinkTheNATSServer checks).
package natstest

import (
	"errors"
	"fmt"
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
	// A restart on the same port can find it taken for a moment: a client reconnecting to the
	// stopped server may be given that very port as its own and connect to itself. The server then
	// reports that it cannot listen, and is tried again at once. Otherwise it gets all the time a
	// loaded machine needs (JetStream's recovery of the store can be slow): a short wait here would
	// give up on a server that was about to be ready, and fail every try on a busy machine.
	for try := 1; ; try++ {
		o := s.opts
		o.Port = s.port
		srv, err := server.NewServer(&o)
		if err != nil {
			return err
		}
		fatal := &fatalLog{c: make(chan string, 1)}
		srv.SetLogger(fatal, false, false)
		go srv.Start()
		why := ""
		for deadline := time.Now().Add(time.Minute); why == ""; {
			if srv.ReadyForConnections(100 * time.Millisecond) {
				s.srv, s.port = srv, srv.Addr().(*net.TCPAddr).Port
				return nil
			}
			select {
			case why = <-fatal.c:
			default:
				if time.Now().After(deadline) {
					why = "not ready for connections after a minute"
				}
			}
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		if try == 50 {
			return fmt.Errorf("the embedded NATS server did not start: %s", why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fatalLog is the server's logger: it passes on the first fatal error (such as a port it cannot
// listen on) and drops the rest.
type fatalLog struct{ c chan string }

func (l *fatalLog) Fatalf(format string, v ...any) {
	select {
	case l.c <- fmt.Sprintf(format, v...):
	default:
	}
}
func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

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
