// Package output renders data for people and scripts (JSON, tables, plain text) and owns the one
// mapping from errors to process exit codes.
package output

import (
	"context"
	"errors"
	"fmt"
)

// The exit codes qkit uses, documented in `qkit help exit-codes`.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitRejected    = 3
	ExitNotFound    = 4
	ExitInvalid     = 5 // no answer valid against --schema after the retries
	ExitBudget      = 6 // --max-turns or --max-credits was hit
	ExitTimeout     = 124
	ExitInterrupted = 130 // 128 + SIGINT
	ExitHangup      = 129 // 128 + SIGHUP
	ExitQuit        = 131 // 128 + SIGQUIT
	ExitTerminated  = 143 // 128 + SIGTERM
)

// SignalCode is the exit code of a command that the signal numbered sig stopped: 128 + sig, as a
// shell reports a process the signal killed (130 for SIGINT, 143 for SIGTERM).
func SignalCode(sig int) int { return 128 + sig }

// ExitCodes describes every exit code, in order, for help text and docs.
var ExitCodes = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "success"},
	{ExitFailure, "failure: the command or the agent it ran failed (the agent's stderr is in the message), or a question set was already answered, rejected or closed"},
	{ExitUsage, "usage error: unknown command or flag, bad value, or an answer is needed and no TTY or --no-input (the message names the flag to pass)"},
	{ExitRejected, "rejected or declined by the user"},
	{ExitNotFound, "not found: no such profile, session, question set or setting target"},
	{ExitInvalid, "no valid answer: with --schema (or the MCP tool's output_schema), no reply held JSON valid against the schema after the retries (the last reply and its errors are kept)"},
	{ExitBudget, "budget exceeded: --max-turns or --max-credits was hit; the turn was stopped and what arrived was kept"},
	{ExitTimeout, "timed out (partial output, if any, was still printed)"},
	{ExitHangup, "stopped by SIGHUP (the terminal closed); whatever qkit started was stopped"},
	{ExitInterrupted, "interrupted (Ctrl-C, SIGINT); whatever qkit started was stopped"},
	{ExitQuit, "stopped by SIGQUIT (Ctrl-\\); whatever qkit started was stopped"},
	{ExitTerminated, "stopped by SIGTERM (a supervisor, kill, or a client closing a server); whatever qkit started was stopped"},
}

// Error carries an exit code alongside the error it wraps. Its message is the wrapped error's.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// WithCode wraps err so that Code reports code for it. A nil err stays nil.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Errorf formats an error that exits with code.
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// UsageErrorf formats a usage error (exit 2). Usage errors make the command print its usage line.
func UsageErrorf(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// NotFoundf formats a not-found error (exit 4).
func NotFoundf(format string, args ...any) error {
	return &Error{Code: ExitNotFound, Err: fmt.Errorf(format, args...)}
}

// SilentError exits with its code without printing anything more: the command already said why.
type SilentError struct{ Code int }

func (e SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Code maps an error to the exit code of the table above. The outermost *Error wins; a bare
// context deadline is a timeout and a bare cancellation an interruption.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var se SilentError
	if errors.As(err, &se) {
		return se.Code
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitFailure
}
