package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Restarts on the same port succeed while a client keeps trying to reconnect to it (the client may
// be given that very port for its own end and connect to itself, which takes the port for a moment),
// and the client is connected again afterwards.
func TestRestartsWhileAClientReconnects(t *testing.T) {
	s, err := Start(server.Options{})
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
