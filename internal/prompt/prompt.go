// Package prompt asks the person at the terminal. Commands depend on the Prompter interface, so the
// survey implementation can be swapped for a test double (Stub) or another library.
package prompt

import (
	"errors"
	"fmt"
	"io"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"

	"github.com/qkit-cli/qkit/internal/output"
)

// ErrInterrupted is returned when the person pressed Ctrl-C at a prompt. It exits 130, as an
// interrupt does anywhere else.
var ErrInterrupted = output.WithCode(output.ExitInterrupted, errors.New("interrupted"))

// Prompter asks questions. Indexes refer to the options passed in.
type Prompter interface {
	Confirm(message string, def bool) (bool, error)
	Select(message string, options []string, def int) (int, error)
	MultiSelect(message string, options []string) ([]int, error)
	Input(message, def string) (string, error)
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

func (s *Survey) ask(p survey.Prompt, resp any) error {
	err := survey.AskOne(p, resp, survey.WithStdio(s.stdio.In, s.stdio.Out, s.stdio.Err))
	if errors.Is(err, terminal.InterruptErr) {
		return ErrInterrupted
	}
	return err
}

// Confirm asks a yes/no question.
func (s *Survey) Confirm(message string, def bool) (bool, error) {
	var ok bool
	err := s.ask(&survey.Confirm{Message: message, Default: def}, &ok)
	return ok, err
}

// Select asks for one of options and returns its index.
func (s *Survey) Select(message string, options []string, def int) (int, error) {
	var i int
	p := &survey.Select{Message: message, Options: options}
	if def >= 0 && def < len(options) {
		p.Default = options[def]
	}
	err := s.ask(p, &i)
	return i, err
}

// MultiSelect asks for any number of options and returns their indexes.
func (s *Survey) MultiSelect(message string, options []string) ([]int, error) {
	var is []int
	err := s.ask(&survey.MultiSelect{Message: message, Options: options}, &is)
	return is, err
}

// Input asks for a line of text.
func (s *Survey) Input(message, def string) (string, error) {
	var text string
	err := s.ask(&survey.Input{Message: message, Default: def}, &text)
	return text, err
}

// Stub is a Prompter for tests: it returns queued answers in order and fails when it runs out or
// when a prompt of another kind comes next.
type Stub struct {
	Answers []any // bool for Confirm, int for Select, []int for MultiSelect, string for Input
	Asked   []string
}

func (s *Stub) next(kind, message string) (any, error) {
	s.Asked = append(s.Asked, message)
	if len(s.Answers) == 0 {
		return nil, fmt.Errorf("prompt stub: no answer queued for %s %q", kind, message)
	}
	a := s.Answers[0]
	s.Answers = s.Answers[1:]
	return a, nil
}

// Confirm returns the next queued bool.
func (s *Stub) Confirm(message string, _ bool) (bool, error) {
	a, err := s.next("confirm", message)
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
func (s *Stub) Select(message string, _ []string, _ int) (int, error) {
	a, err := s.next("select", message)
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
func (s *Stub) MultiSelect(message string, _ []string) ([]int, error) {
	a, err := s.next("multiselect", message)
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
func (s *Stub) Input(message, _ string) (string, error) {
	a, err := s.next("input", message)
	if err != nil {
		return "", err
	}
	t, ok := a.(string)
	if !ok {
		return "", fmt.Errorf("prompt stub: input %q got %T", message, a)
	}
	return t, nil
}
