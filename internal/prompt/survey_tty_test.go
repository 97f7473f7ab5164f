//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package prompt

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/qkit-cli/qkit/internal/ptytest"
)

// Each survey prompt, open on a terminal in raw mode, ends with ErrInterrupted when its context
// ends (a signal cancels it), and leaves the terminal in the mode it had, with the cursor shown.
func TestSurveyEndsWithItsContext(t *testing.T) {
	for name, ask := range map[string]func(context.Context, Prompter) error{
		"confirm": func(ctx context.Context, p Prompter) error { _, err := p.Confirm(ctx, "Sure?", false); return err },
		"select": func(ctx context.Context, p Prompter) error {
			_, err := p.Select(ctx, "Pick", []string{"a", "b"}, 0)
			return err
		},
		"multiselect": func(ctx context.Context, p Prompter) error {
			_, err := p.MultiSelect(ctx, "Many", []string{"a", "b"})
			return err
		},
		"input": func(ctx context.Context, p Prompter) error { _, err := p.Input(ctx, "Say", ""); return err },
	} {
		t.Run(name, func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			var mu sync.Mutex
			var screen bytes.Buffer
			go func() {
				b := make([]byte, 4096)
				for {
					n, err := ptmx.Read(b)
					if n > 0 {
						if bytes.Contains(b[:n], []byte("\x1b[6n")) { // where the cursor is
							_, _ = ptmx.Write([]byte("\x1b[1;1R"))
						}
						mu.Lock()
						screen.Write(b[:n])
						mu.Unlock()
					}
					if err != nil {
						return
					}
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- ask(ctx, NewSurvey(Stdio{In: tty, Out: tty, Err: tty})) }()
			if err := ptytest.WaitRaw(tty, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, ErrInterrupted) {
					t.Fatalf("got %v, want ErrInterrupted", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the prompt was still open 30 s after its context ended")
			}
			if err := ptytest.Cooked(tty); err != nil {
				t.Fatal(err)
			}
			// What survey wrote is on the master side by now; the reader may lag behind it.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				mu.Lock()
				s := screen.Bytes()
				// (An answer to a cursor query that comes after the prompt ended is echoed after it.)
				rest := s[max(0, bytes.LastIndex(s, []byte("\x1b[?25l"))):]
				shown := bytes.Contains(rest, []byte("\x1b[?25h")) && bytes.Contains(rest, []byte("\r\n"))
				mu.Unlock()
				if shown {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the cursor was left hidden or the line unended: %q", s)
				}
			}
		})
	}
}
