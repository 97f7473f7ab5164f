//go:build unix

package natsstore

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// A credentials or TLS file that is a FIFO is named with its setting before any connection, never
// opened for reading: no writer would ever come, and New would hang.
func TestNATSCredsFIFONotRead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.creds")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = New(Config{URL: "nats://127.0.0.1:1", Installation: "x", Creds: fifo}, questions.Options{})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("New with a FIFO for credentials is blocked")
	}
	want := "questions.nats_creds: " + fifo + " is not a regular file"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
