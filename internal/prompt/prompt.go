// Package prompt asks the person at the terminal. Commands depend on the Prompter interface, so the
// survey implementation can be swapped for a test double (Stub) or another library.
package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"
	"golang.org/x/term"

	"github.com/qkit-cli/qkit/internal/output"
)

// ErrInterrupted is returned when the person pressed Ctrl-C at a prompt, or when the prompt's
// context ended while it waited (a signal: SIGINT, SIGTERM, SIGHUP). It exits 130, as an interrupt
// does anywhere else; the command's runner turns a signal's cancel into 128 + its number.
var ErrInterrupted = output.WithCode(output.ExitInterrupted, errors.New("interrupted"))

var errEOF = io.EOF

// Prompter asks questions. Indexes refer to the options passed in. Each prompt returns
// ErrInterrupted as soon as ctx ends, with the terminal back in the mode it had before the prompt
// and the cursor shown.
type Prompter interface {
	Confirm(ctx context.Context, message string, def bool) (bool, error)
	Select(ctx context.Context, message string, options []string, def int) (int, error)
	MultiSelect(ctx context.Context, message string, options []string) ([]int, error)
	Input(ctx context.Context, message, def string) (string, error)
}

// Stdio is what the survey prompter reads from and writes to: a terminal.
type Stdio struct {
	In  terminal.FileReader
	Out terminal.FileWriter
	Err io.Writer
}

// Survey is the Prompter used on a real terminal.
type Survey struct{ stdio Stdio }

// NewSurvey returns a survey-backed Prompter on the given terminal.
func NewSurvey(s Stdio) *Survey { return &Survey{stdio: s} }

// unwindGrace is how long ask waits, once ctx has ended, for survey to put the terminal back itself
// before ask does it and returns: where the read cannot be ended (see newCancelReader) survey stays
// blocked, and the process is about to exit.
const unwindGrace = time.Second

// ask runs one survey prompt on the terminal, reading it through a reader that ctx's end stops.
// survey puts the terminal in raw mode (no echo, no line editing, no signals from keys) while it
// reads; the mode saved here before it starts is put back, and the cursor shown, whenever ctx ends
// the prompt, so a signal never leaves the terminal raw or the cursor hidden.
func (s *Survey) ask(ctx context.Context, p survey.Prompt, resp any) error {
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	fd := int(s.stdio.In.Fd())
	saved, stateErr := term.GetState(fd)
	in, closeIn, err := newCancelReader(ctx, s.stdio.In)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer closeIn()
		done <- survey.AskOne(p, resp, survey.WithStdio(in, s.stdio.Out, s.stdio.Err))
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(unwindGrace):
		}
	}
	if ctx.Err() != nil {
		if stateErr == nil {
			_ = term.Restore(fd, saved)
		}
		// Show the cursor (survey hides it while a list is drawn) and end the prompt's line, so
		// what follows starts a line of its own.
		_, _ = fmt.Fprint(s.stdio.Out, "\x1b[?25h\r\n")
		return ErrInterrupted
	}
	if errors.Is(err, terminal.InterruptErr) {
		return ErrInterrupted
	}
	return err
}

// Confirm asks a yes/no question.
func (s *Survey) Confirm(ctx context.Context, message string, def bool) (bool, error) {
	var ok bool
	if err := s.ask(ctx, &survey.Confirm{Message: message, Default: def}, &ok); err != nil {
		return false, err
	}
	return ok, nil
}

// Select asks for one of options and returns its index.
func (s *Survey) Select(ctx context.Context, message string, options []string, def int) (int, error) {
	var i int
	p := &survey.Select{Message: message, Options: options}
	if def >= 0 && def < len(options) {
		p.Default = options[def]
	}
	if err := s.ask(ctx, p, &i); err != nil {
		return 0, err
	}
	return i, nil
}

// MultiSelect asks for any number of options and returns their indexes.
func (s *Survey) MultiSelect(ctx context.Context, message string, options []string) ([]int, error) {
	var is []int
	if err := s.ask(ctx, &survey.MultiSelect{Message: message, Options: options}, &is); err != nil {
		return nil, err
	}
	return is, nil
}

// Input asks for a line of text.
func (s *Survey) Input(ctx context.Context, message, def string) (string, error) {
	var text string
	if err := s.ask(ctx, &survey.Input{Message: message, Default: def}, &text); err != nil {
		return "", err
	}
	return text, nil
}

// Stub is a Prompter for tests: it returns queued answers in order and fails when it runs out or
// when a prompt of another kind comes next. A prompt whose ctx has ended returns ErrInterrupted.
type Stub struct {
	Answers []any // bool for Confirm, int for Select, []int for MultiSelect, string for Input
	Asked   []string
}

func (s *Stub) next(ctx context.Context, kind, message string) (any, error) {
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	s.Asked = append(s.Asked, message)
	if len(s.Answers) == 0 {
		return nil, fmt.Errorf("prompt stub: no answer queued for %s %q", kind, message)
	}
	a := s.Answers[0]
	s.Answers = s.Answers[1:]
	return a, nil
}

// Confirm returns the next queued bool.
func (s *Stub) Confirm(ctx context.Context, message string, _ bool) (bool, error) {
	a, err := s.next(ctx, "confirm", message)
	if err != nil {
		return false, err
	}
	b, ok := a.(bool)
	if !ok {
		return false, fmt.Errorf("prompt stub: confirm %q got %T", message, a)
	}
	return b, nil
}

// Select returns the next queued int.
func (s *Stub) Select(ctx context.Context, message string, _ []string, _ int) (int, error) {
	a, err := s.next(ctx, "select", message)
	if err != nil {
		return 0, err
	}
	i, ok := a.(int)
	if !ok {
		return 0, fmt.Errorf("prompt stub: select %q got %T", message, a)
	}
	return i, nil
}

// MultiSelect returns the next queued []int.
func (s *Stub) MultiSelect(ctx context.Context, message string, _ []string) ([]int, error) {
	a, err := s.next(ctx, "multiselect", message)
	if err != nil {
		return nil, err
	}
	is, ok := a.([]int)
	if !ok {
		return nil, fmt.Errorf("prompt stub: multiselect %q got %T", message, a)
	}
	return is, nil
}

// Input returns the next queued string.
func (s *Stub) Input(ctx context.Context, message, _ string) (string, error) {
	a, err := s.next(ctx, "input", message)
	if err != nil {
		return "", err
	}
	t, ok := a.(string)
	if !ok {
		return "", fmt.Errorf("prompt stub: input %q got %T", message, a)
	}
	return t, nil
}
