package app

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// Streams are the process's standard streams and what is known about them.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	StdinTTY  bool
	StdoutTTY bool
	StderrTTY bool
	// NoInput is set by --no-input: never prompt, even on a terminal.
	NoInput bool
	// NoColor is set when NO_COLOR is in the environment.
	NoColor bool
}

// System returns the process's own streams with their terminal facts.
func System() *Streams {
	noColor := os.Getenv("NO_COLOR") != ""
	return &Streams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		StdinTTY:  isTerminal(os.Stdin),
		StdoutTTY: isTerminal(os.Stdout),
		StderrTTY: isTerminal(os.Stderr),
		NoColor:   noColor,
	}
}

// Test returns streams over buffers, none of them a terminal.
func Test() (*Streams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &Streams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// CanPrompt reports whether a question may be put to the person: stdin and stdout are terminals and
// --no-input was not given.
func (s *Streams) CanPrompt() bool { return s.StdinTTY && s.StdoutTTY && !s.NoInput }

// ColorEnabled reports whether stdout may carry colour.
func (s *Streams) ColorEnabled() bool { return s.StdoutTTY && !s.NoColor }
