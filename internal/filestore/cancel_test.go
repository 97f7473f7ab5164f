package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var errStopped = errors.New("interrupt received")

// TestUpdateCalledOffWhileWaiting: a change whose context ends while another process holds the
// lock is never made, not even once the lock is free. `context clear` interrupted while it waited
// reported exit 130 and then cleared the profile anyway when the lock freed.
func TestUpdateCalledOffWhileWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := LockFor(path, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- UpdateContext(ctx, path, 0o600, 0o700, func([]byte) ([]byte, error) { return []byte("new"), nil })
	}()
	cancel(errStopped)
	held.Unlock() // the lock frees: a change that ignored ctx would now go through
	err = <-done
	if !errors.Is(err, errStopped) {
		t.Fatalf("UpdateContext = %v, want the context's cause", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("the file holds %q after a cancelled change, want it unchanged", got)
	}
	// The lock was let go: the next change takes it.
	if err := Update(path, 0o600, 0o700, func([]byte) ([]byte, error) { return []byte("later"), nil }); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateRechecksBeforeWriting: a context that ends after the lock was taken (while fn ran)
// still stops the write.
func TestUpdateRechecksBeforeWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	ran := false
	err := UpdateContext(ctx, path, 0o600, 0o700, func([]byte) ([]byte, error) {
		ran = true
		cancel(errStopped)
		return []byte("new"), nil
	})
	if !ran || !errors.Is(err, errStopped) {
		t.Fatalf("ran %v, err %v: want fn run and the context's cause", ran, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("the file holds %q, want it unchanged", got)
	}
}

// TestLockForContextEndedBefore: an ended context takes no lock at all.
func TestLockForContextEndedBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l, err := LockForContext(ctx, path, 0o700); !errors.Is(err, context.Canceled) {
		l.Unlock()
		t.Fatalf("LockForContext = %v", err)
	}
	l, err := LockForContext(context.Background(), path, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
}
