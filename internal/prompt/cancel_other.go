//go:build !unix

package prompt

import (
	"context"

	"github.com/AlecAivazis/survey/v2/terminal"
)

// newCancelReader reads the terminal as it is: without poll(2), a read blocked on the terminal is not
// ended. Survey.ask still returns ErrInterrupted when ctx ends and restores the terminal's mode.
func newCancelReader(_ context.Context, in terminal.FileReader) (terminal.FileReader, func(), error) {
	return in, func() {}, nil
}
