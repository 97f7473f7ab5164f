// Package app wires what every command needs, once per process: the configuration, the standard
// streams and their terminal facts, the prompter and the logger. There is no package-level state;
// each command tree gets its own App.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/AlecAivazis/survey/v2/terminal"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/prompt"
)

// App is the per-process wiring handed to every command.
type App struct {
	IO *Streams
	// Config is loaded by the root command before any command runs.
	Config *config.Config
	// Logger writes to stderr, never stdout: stdout may carry a protocol.
	Logger *slog.Logger
	// Prompter asks the person; nil means the survey prompter on IO.
	Prompter prompt.Prompter
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Version is the build's version information.
	Version VersionInfo
	// Dir is the working directory commands resolve relative paths against; empty means the
	// process's own. In-process runs for an ACP session set it to the session's cwd (a process-wide
	// chdir would race between sessions).
	Dir string
	// ProfileFlag is the global --profile flag: the context profile to use instead of the active one.
	ProfileFlag string
	// Source says who runs the command: "cli", or "mcp"/"acp" for internal commands.
	Source string
}

// VersionInfo is set by the linker (see the Makefile and .goreleaser.yaml).
type VersionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
}

// New returns an App on the given streams. Config and Logger are filled by Load.
func New(io *Streams, v VersionInfo) *App {
	return &App{IO: io, Now: time.Now, Version: v, Source: "cli", Logger: slog.New(slog.DiscardHandler)}
}

// Load reads the configuration and sets up the logger. level is the --log-level flag (empty: the
// log.level setting).
func (a *App) Load(opts config.LoadOptions, level string) error {
	cfg, err := config.Load(opts)
	if err != nil {
		return err
	}
	a.Config = cfg
	if level == "" {
		level = config.LogLevel.Get(cfg)
	}
	lv, err := ParseLevel(level)
	if err != nil {
		return output.UsageErrorf("invalid --log-level %q: expected debug, info, warn or error", level)
	}
	a.Logger = NewLogger(a.IO.ErrOut, lv)
	return nil
}

// ParseLevel reads a log level name.
func ParseLevel(s string) (slog.Level, error) {
	var lv slog.Level
	err := lv.UnmarshalText([]byte(strings.ToUpper(strings.TrimSpace(s))))
	return lv, err
}

// NewLogger returns a text logger on w (stderr) that prefixes its lines with "qkit:".
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// Prompt returns the prompter, or an error naming flag when no question may be asked here (no
// terminal, or --no-input). flag is what supplies the answer instead, e.g. "--yes".
func (a *App) Prompt(flag string) (prompt.Prompter, error) {
	if !a.IO.CanPrompt() {
		why := "stdin is not a terminal"
		if a.IO.NoInput {
			why = "--no-input is set"
		}
		return nil, output.UsageErrorf("an answer is needed but %s: pass %s", why, flag)
	}
	if a.Prompter != nil {
		return a.Prompter, nil
	}
	in, inOK := a.IO.In.(terminal.FileReader)
	out, outOK := a.IO.Out.(terminal.FileWriter)
	if !inOK || !outOK {
		return nil, output.UsageErrorf("an answer is needed but the streams are not a terminal: pass %s", flag)
	}
	return prompt.NewSurvey(prompt.Stdio{In: in, Out: out, Err: a.IO.ErrOut}), nil
}

// Confirm asks a yes/no question whose default is no, or fails like Prompt, naming flag, when no
// question may be asked here. It returns prompt.ErrInterrupted when ctx ends while it waits.
func (a *App) Confirm(ctx context.Context, flag, question string) (bool, error) {
	p, err := a.Prompt(flag)
	if err != nil {
		return false, err
	}
	return p.Confirm(ctx, question, false)
}

// WorkingDir returns Dir, or the process's working directory when Dir is empty.
func (a *App) WorkingDir() (string, error) {
	if a.Dir != "" {
		return a.Dir, nil
	}
	return os.Getwd()
}

// Palette returns the colours for stdout.
func (a *App) Palette() output.Palette { return output.Palette{Enabled: a.IO.ColorEnabled()} }

// Warnf prints a warning line to stderr as "qkit: warning: ...".
func (a *App) Warnf(format string, args ...any) {
	fmt.Fprintf(a.IO.ErrOut, "qkit: warning: "+format+"\n", args...)
}

// Errorf prints a line to stderr as "qkit: ...".
func (a *App) Errorf(format string, args ...any) {
	fmt.Fprintf(a.IO.ErrOut, "qkit: "+format+"\n", args...)
}

var _ terminal.FileReader = os.Stdin
