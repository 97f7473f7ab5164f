//go:build unix

package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// TestLoadRefusesAFIFO: a config.yaml that is a FIFO (made in the test's folder) is refused with
// its name and kind rather than read: every command hung on it.
func TestLoadRefusesAFIFO(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"QKIT_HOME": t.TempDir()}), KeepBroken: true})
	if err == nil || !strings.Contains(err.Error(), "config file "+file+" is a FIFO, not a regular file") {
		t.Fatalf("Load = %v", err)
	}
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi, err)
	}
}

// TestResetCalledOffWhileWaiting: `settings reset` interrupted while another process holds the
// config's lock leaves the file as it was, even once the lock frees.
func TestResetCalledOffWhileWaiting(t *testing.T) {
	home := t.TempDir()
	c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": home})})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(context.Background(), "agent.timeout", "10s"); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(c.File)
	held, err := filestore.LockFor(c.File, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("interrupt received")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Reset(ctx, "agent.timeout") }()
	cancel(stop)
	held.Unlock()
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Reset = %v, want the interrupt", err)
	}
	if after, _ := os.ReadFile(c.File); string(after) != string(before) {
		t.Fatalf("config.yaml went from %q to %q", before, after)
	}
}
