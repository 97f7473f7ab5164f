package natstest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Restarts on the same port succeed while a client keeps trying to reconnect to it (the client may
// be given that very port for its own end and connect to itself, which takes the port for a moment),
// and the client is connected again afterwards.
func TestRestartsWhileAClientReconnects(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	nc, err := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for i := 0; i < 20; i++ {
		if err := s.Restart(); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); !nc.IsConnected(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client never reconnected")
		}
	}
}

// A key-value bucket outlives a restart (the server was stopped cleanly and reads its store
// again), on the same port; the token and the largest payload reach the server.
func TestRestartKeepsTheBucketsAndTheOptions(t *testing.T) {
	s, err := Start(Options{JetStream: true, StoreDir: filepath.Join(t.TempDir(), "nats"), Token: `s3$cret"\`, MaxPayload: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := nats.Connect(s.URL()); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("without the token: %v", err)
	}
	connect := func() (*nats.Conn, jetstream.JetStream) {
		t.Helper()
		nc, err := nats.Connect(s.URL(), nats.Token(`s3$cret"\`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	nc, js := connect()
	if got := nc.MaxPayload(); got != 1<<16 {
		t.Errorf("max payload %d, want %d", got, 1<<16)
	}
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	nc.Close()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Fatalf("port %d after the restart, was %d", s.Port(), port)
	}
	_, js = connect()
	kv, err = js.KeyValue(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(t.Context(), "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("after the restart: %v %v", e, err)
	}
	if err := s.Up(); err == nil {
		t.Fatal("Up on a running server did not fail")
	}
}

// Stop ends the process: nothing listens on the port any more, and a second Stop is harmless.
func TestStopEndsTheServer(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	if nc, err := nats.Connect(s.URL(), nats.Timeout(time.Second)); err == nil {
		nc.Close()
		t.Fatal("connected to a stopped server")
	}
}

// A server that cannot start fails Start with its own words: here a TLS certificate that does not
// exist, named in the error.
func TestStartFailsWithTheServersLog(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	s, err := Start(Options{TLS: &TLS{CertFile: missing, KeyFile: missing}})
	if err == nil {
		s.Stop()
		t.Fatal("started with a missing certificate")
	}
	if !strings.Contains(err.Error(), missing) {
		t.Fatalf("the error does not name the file: %v", err)
	}
	t.Log(err)
}

// A port that stays taken is tried again, then reported as taken.
func TestPortTaken(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	again := &Server{opts: Options{Port: s.Port()}, port: s.Port(), tries: 2}
	if err := again.start(); !errors.Is(err, errPortTaken) {
		again.Stop()
		t.Fatalf("got %v, want the port taken", err)
	}
}

// QKIT_NATS_SERVER names the executable; one that does not exist is an error naming the variable.
func TestTheExecutableFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvServer, filepath.Join(t.TempDir(), "nats-server"))
	_, err := Start(Options{})
	if err == nil || !strings.Contains(err.Error(), "$"+EnvServer) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

// Values are quoted in the configuration's own syntax; a control character is refused.
func TestQuote(t *testing.T) {
	if got, err := quote(`a"b\c $d`); err != nil || got != `"a\"b\\c $d"` {
		t.Fatalf("got %s %v", got, err)
	}
	if _, err := quote("a\nb"); err == nil {
		t.Fatal("a newline was quoted")
	}
}
