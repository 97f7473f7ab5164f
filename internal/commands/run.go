package commands

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/qkit-cli/qkit/internal/output"
)

// The sources written to the audit log.
const (
	SourceCLI = "cli"
	SourceMCP = "mcp"
	SourceACP = "acp"
)

// ConfirmFunc asks the user whether to run a change. It returns false when the user says no, an
// error wrapping ErrInterrupted when the question was cancelled before an answer (Ctrl-C at the
// CLI's prompt, an MCP elicitation answered "cancel", an ACP permission request answered
// "cancelled"), and another error when the question could not be asked at all. A context that ends
// while it asks is an interruption too, whatever it returns.
type ConfirmFunc func(ctx context.Context, c *Call) (bool, error)

// RunOptions say who runs a call and how a change is confirmed.
type RunOptions struct {
	// Source is "cli", "mcp" or "acp".
	Source string
	// Dir is the working directory the command sees (an ACP session's cwd), an absolute path; empty
	// means the process's own. It is written to the audit log.
	Dir string
	// Confirm is called for a call that NeedsConfirmation. Nil means there is no way to ask: such a
	// call fails with ErrConfirmationNeeded and nothing runs.
	Confirm ConfirmFunc
}

// Result is what an internal command produced.
type Result struct {
	CommandLine string `json:"command_line"`
	// Output is the command's stdout, capped at agent.max_response_size with the truncation notice.
	Output string `json:"output"`
	// Stderr is what the command said on stderr (its error text when it failed).
	Stderr   string `json:"stderr,omitempty"`
	ExitCode int    `json:"exit_code"`
	// Confirmed is set when the user confirmed a change.
	Confirmed bool `json:"confirmed"`
	// Truncation is set when Output was cut.
	Truncation *output.Truncation `json:"-"`
}

// Text is the result as one text for an assistant: the output, then the error text of a failing
// command (or stderr notes of a succeeding one).
func (res Result) Text() string {
	out := res.Output
	if res.Stderr != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += res.Stderr
	}
	return out
}

// Message is the result as an assistant reads it, in the same words whichever front end ran the
// command (the internal_command MCP tool, an ACP slash command): the command's text, or
// `"COMMAND": done.` when it printed nothing, after `"COMMAND" exited N:` when it failed
// (`"COMMAND" exited N.` alone when it failed silently). The command line is shown as Call.Display
// shows it: the assistant may show the text to a person in a terminal. The text ends with a line
// break.
func (res Result) Message() string {
	text, line := res.Text(), display(res.CommandLine)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	switch {
	case res.ExitCode != 0 && text == "":
		return fmt.Sprintf("%s exited %d.\n", line, res.ExitCode)
	case res.ExitCode != 0:
		return fmt.Sprintf("%s exited %d:\n%s", line, res.ExitCode, text)
	case text == "":
		return line + ": done.\n"
	}
	return text
}

// DeclinedMessage says that the user declined c and that nothing ran.
func DeclinedMessage(c *Call) string {
	return fmt.Sprintf("The user declined to run %s; it did not run.\n", c.Display())
}

// InterruptedMessage says that the question about c was cancelled before the user answered and
// that nothing ran.
func InterruptedMessage(c *Call) string {
	return fmt.Sprintf("The question whether to run %s was cancelled before the user answered; it did not run.\n", c.Display())
}

// HowToConfirm says who can let c run when it cannot be confirmed here. internal.trusted is named
// only for a change it can waive. The command line is c.Display(): the text goes to an assistant,
// which may show it to a person in a terminal.
func HowToConfirm(c *Call) string {
	if c.Guarded {
		return "it changes " + strings.Join(guardedSettings, " or ") + " (settings reset --all resets both), which " +
			TrustSetting + " never allows unasked, so only the user can run it, in a terminal: " + c.Display()
	}
	return "the user must confirm it, or list it in the setting " + TrustSetting
}

// ErrDeclined is returned by Run when the user declined a change.
var ErrDeclined = errors.New("the user declined")

// ErrInterrupted is returned by Run when the question about a change was cancelled before the
// user answered. Every door records it the same way: exit code 130 and "interrupted" in the audit
// line, not a no (the user never said no: they pressed Ctrl-C, the editor cancelled the turn, the
// client dismissed the form).
var ErrInterrupted = errors.New("interrupted before the user answered")

// Run runs a prepared call: it confirms a change through opts.Confirm when needed, executes the
// command in-process, caps its output and writes the audit line. A command that fails is not an error
// here: its exit code and error text are in the Result. Run's error is for calls that did not run:
// declined (exit code 3 in the Result, ErrDeclined, audited as declined); interrupted while asking
// (exit code 130, ErrInterrupted, audited as interrupted); no way to confirm; confirmation failed
// (neither of the last two is audited: nothing was asked).
func (r *Registry) Run(ctx context.Context, c *Call, opts RunOptions) (Result, error) {
	res := Result{CommandLine: c.CommandLine}
	if opts.Dir != "" && !filepath.IsAbs(opts.Dir) {
		return res, fmt.Errorf("%s: working directory %q is not an absolute path", c.Display(), opts.Dir)
	}
	start := r.opts.Now()
	if c.NeedsConfirmation {
		if opts.Confirm == nil {
			return res, ConfirmationNeededError(c, HowToConfirm(c))
		}
		ok, err := opts.Confirm(ctx, c)
		if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
			// Also when an answer came after the context ended: whoever ended it wants nothing run.
			res.ExitCode = output.ExitInterrupted
			res.Stderr = fmt.Sprintf("qkit: %s: interrupted before the user answered; it did not run\n", c.Display())
			res.Stderr += r.audit(opts, c, res, start, true)
			return res, output.WithCode(output.ExitInterrupted, fmt.Errorf("%s: %w", c.Display(), ErrInterrupted))
		}
		if err != nil {
			return res, err
		}
		if !ok {
			res.ExitCode = output.ExitRejected
			res.Stderr = fmt.Sprintf("qkit: %s: declined by the user\n", c.Display())
			res.Stderr += r.audit(opts, c, res, start, false)
			return res, output.WithCode(output.ExitRejected, fmt.Errorf("%s: %w", c.Display(), ErrDeclined))
		}
		res.Confirmed = true
	}
	if c.listing {
		res.Output = r.ListingText()
	} else {
		out := r.exec.Run(ctx, c.runArgv(), opts.Source, opts.Dir)
		total := out.Total
		if total < int64(len(out.Stdout)) {
			total = int64(len(out.Stdout))
		}
		res.Output, res.Truncation = output.CapHead([]byte(out.Stdout), total, r.opts.MaxOutput)
		if res.Truncation != nil && r.opts.Logger != nil {
			// As the agent runner does: the notice tells the assistant, the log tells whoever runs
			// the server.
			r.opts.Logger.Warn("internal command output truncated", "command", strings.Join(c.Argv, " "),
				"original_bytes", res.Truncation.Original, "limit", r.opts.MaxOutput)
		}
		res.Stderr, _ = output.Cap(out.Stderr, r.opts.MaxOutput)
		res.ExitCode = out.ExitCode
	}
	res.Stderr += r.audit(opts, c, res, start, false)
	return res, nil
}

// ListingText is the registry as text: each runnable entry's name, access, description and usage. A bare
// `help` prints it.
func (r *Registry) ListingText() string {
	var b strings.Builder
	b.WriteString("Internal commands (read: runs at once; change: needs the user's confirmation):\n")
	for _, e := range r.Runnable() {
		// Usage lines run from 10 to 70 characters: a column for them would not line up.
		fmt.Fprintf(&b, "  %s (%s): %s\n      %s\n", e.Name, e.Access, e.Short, e.Usage)
	}
	return b.String()
}

// runArgv is the argv that runs. A confirmed or trusted change whose command has its own --yes gets
// it: the user has already said yes, and the in-process run has no terminal to ask again.
func (c *Call) runArgv() []string {
	if c.Access != Change {
		return c.Argv
	}
	if f, ok := c.Entry.flag("yes"); !ok || !f.NoValue {
		return c.Argv
	}
	at := len(c.Argv)
	for i, a := range c.Argv {
		if a == "--yes" || strings.HasPrefix(a, "--yes=") {
			return c.Argv
		}
		if a == "--" {
			at = i
			break
		}
	}
	argv := append(append(append([]string(nil), c.Argv[:at]...), "--yes"), c.Argv[at:]...)
	return argv
}
