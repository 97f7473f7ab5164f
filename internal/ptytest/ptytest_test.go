//go:build unix

package ptytest

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// A new pseudo-terminal is cooked; once its program side is made raw, both sides say so.
func TestCanonicalFollowsTheMode(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	for _, f := range []*os.File{ptmx, tty} {
		if c, err := Canonical(f); err != nil || !c {
			t.Fatalf("new terminal: canonical %v, %v", c, err)
		}
	}
	if err := WaitRaw(tty, 10*time.Millisecond); err == nil {
		t.Fatal("WaitRaw returned on a cooked terminal")
	}
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{ptmx, tty} {
		if err := WaitRaw(f, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// What is typed and not yet read is pending; once read, nothing is.
func TestPendingCountsUnreadInput(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if _, err := Pending(tty); err != nil {
		t.Skipf("cannot tell here: %v", err)
	}
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		t.Fatal(err)
	}
	if _, err := ptmx.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	// Counted at once, although the terminal hands them to its input queue a moment later.
	if n, err := Pending(tty); err != nil || n != 3 {
		t.Fatalf("pending after typing: %d %v", n, err)
	}
	b := make([]byte, 3)
	if _, err := io.ReadFull(tty, b); err != nil {
		t.Fatal(err)
	}
	if n, err := Pending(tty); err != nil || n != 0 {
		t.Fatalf("pending after reading: %d %v", n, err)
	}
}
