package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ConfirmLine asks a yes/no question as one plain line, exactly `message [y/N] ` (or `[Y/n]` when
// def is true), and reads the answer as a line: y or yes, n or no, empty for the default. Anything
// else asks again. End of input is the default. It is for questions whose wording must be exact
// (survey draws its own `? message (y/N)` and redraws it, which garbles a message wider than the
// terminal). The terminal stays in its normal line mode, so Ctrl-C is an interrupt signal: when ctx
// ends while waiting, ConfirmLine returns ErrInterrupted.
func ConfirmLine(ctx context.Context, in io.Reader, out io.Writer, message string, def bool) (bool, error) {
	hint := "[y/N]"
	if def {
		hint = "[Y/n]"
	}
	type answer struct {
		line string
		err  error
	}
	for {
		if _, err := fmt.Fprintf(out, "%s %s ", message, hint); err != nil {
			return false, err
		}
		got := make(chan answer, 1)
		go func() {
			line, err := readLine(in)
			got <- answer{line, err}
		}()
		var a answer
		select {
		case <-ctx.Done():
			// The reader stays blocked on the terminal; the process is about to exit.
			_, _ = fmt.Fprintln(out)
			return false, ErrInterrupted
		case a = <-got:
		}
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			return false, fmt.Errorf("read the answer: %w", a.err)
		}
		switch strings.ToLower(strings.TrimSpace(a.line)) {
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		case "":
			if errors.Is(a.err, io.EOF) {
				_, _ = fmt.Fprintln(out)
			}
			return def, nil
		}
		if errors.Is(a.err, io.EOF) {
			_, _ = fmt.Fprintln(out)
			return def, nil
		}
		if _, err := fmt.Fprintln(out, "Please answer y or n."); err != nil {
			return false, err
		}
	}
}

// readLine reads one line a byte at a time, so nothing after it is taken from in.
func readLine(in io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := in.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return strings.TrimSuffix(b.String(), "\r"), nil
			}
			b.WriteByte(buf[0])
		}
		if err != nil {
			return b.String(), err
		}
	}
}
