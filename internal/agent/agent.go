// Package agent runs the agent CLI (`q chat`, or `kiro-cli chat`) for every front end: `qkit ask`,
// the q-developer-agent MCP tool and ACP prompts.
//
// The argv is `<agent.command> chat --no-interactive [--resume] [--agent A] [--model M]
// [--trust-all-tools] [--trust-tools=a,b] [--verbose] <prompt>` (a prompt that starts with "-",
// such as a context block, is preceded by "--" so the CLI does not read it as a flag). A prompt
// longer than PromptArgMax goes on stdin instead, with no positional prompt (q and kiro-cli read
// stdin in --no-interactive mode when no prompt is given): Linux refuses a single argument over
// 128 KiB, and context files easily make a prompt that long. So does a prompt "-h" or "--help",
// which q's wrapper would answer with its help. A prompt over PromptMax (400,000 bytes, where the
// agent cuts a message) is refused. The agent runs in the caller's working
// directory (or Request.Dir), in its own process group, with stdin closed (or holding the prompt).
// Its stdout is ANSI-stripped and streamed to a callback as it arrives while only MaxResponseSize
// bytes are kept (memory stays flat whatever it prints); stderr is captured separately (its last
// 64 KiB). On timeout or cancellation the whole process group gets SIGTERM, then SIGKILL after a
// short grace, so no grandchild outlives the run; the same sweep runs after a normal exit. (On
// Windows the tree is ended with taskkill /T /F on timeout or cancel; what an agent leaves running
// after a normal exit is not tracked there.)
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/config"
)

// Request is one prompt and the agent flags that go with it.
type Request struct {
	// Prompt is the whole prompt (with any context block); it must not be blank.
	Prompt string
	// Resume continues the conversation saved for the working directory (--resume).
	Resume bool
	// Agent is the agent (context profile) to use (--agent).
	Agent string
	// Model is passed as --model; empty means Limits.DefaultModel, and no flag when that is empty.
	Model string
	// TrustAll trusts every tool (--trust-all-tools).
	TrustAll bool
	// TrustTools are tools to trust (--trust-tools=a,b).
	TrustTools []string
	// Verbose asks the agent for its logs (--verbose; q writes them to stdout).
	Verbose bool
	// Dir is the working directory; empty means the caller's.
	Dir string
}

// Limits are the settings of a run, usually from LimitsFromConfig.
type Limits struct {
	// Command is the agent CLI (agent.command): q or kiro-cli, a name on PATH or a path.
	Command string
	// Timeout bounds the run; 0 means none.
	Timeout time.Duration
	// Deadline, when set with Timeout, ends the run then if Timeout has not ended it before: the
	// prompts of one run (qkit ask --schema's retries) share Timeout this way. A run it stops
	// timed out (the notice names Timeout); one whose Deadline has passed starts nothing.
	Deadline time.Time
	// MaxResponseSize is how many bytes of output are kept; 0 means no limit.
	MaxResponseSize int64
	// StripANSI removes escape sequences and control characters from the output (q colours even
	// pipes). The reply is always read without them; this matters only with RawOutput (RawText).
	StripANSI bool
	// RawOutput makes the reply the agent's stdout as printed: the "> " prefix, tool banners and
	// their description blocks stay in (agent.raw_output). Tool events are reported either way.
	RawOutput bool
	// DefaultModel is used when Request.Model is empty (agent.model).
	DefaultModel string
	// Models, when not empty, are the models Request.Model may name (agent.models).
	Models []string
	// Logger receives the run's log lines (stderr); nil discards them.
	Logger *slog.Logger
	// Grace is how long the process group has between SIGTERM and SIGKILL; 0 means 2 seconds.
	Grace time.Duration
	// LoginProbeAfter is how long the agent may print nothing on stdout before qkit asks
	// `<command> whoami` whether it waits for a login nobody can give (kiro-cli without a
	// credential); a logged-out answer stops the run with a *LoginError. 0 means
	// DefaultLoginProbeAfter; negative, never.
	LoginProbeAfter time.Duration
	// StateDir is qkit's state folder (config.Paths.State), where what is learned about the
	// agent is kept (its backend, its models); "" keeps nothing.
	StateDir string

	// Clock, when set, is what Timeout is counted on (and Deadline read on) instead of the real
	// clock: a test's, which passes the timeout when the agent is where the test needs it
	// (started, its partial reply out) instead of waiting for it. Both backends honour it
	// (Stream, and acpclient's runs); nil is the time package's clock, which qkit itself uses.
	Clock Clock
}

// RawText reports whether the reply is kept as the agent sent it, escape sequences and control
// characters included, on either backend: agent.raw_output with agent.strip_ansi off, both on
// purpose. Otherwise the reply goes through the terminal-safe filter (termtext.Stripper).
func (l Limits) RawText() bool { return l.RawOutput && !l.StripANSI }

// LimitsFromConfig reads the agent.* settings.
func LimitsFromConfig(c *config.Config) Limits {
	return Limits{
		Command:         config.AgentCommand.Get(c),
		Timeout:         config.AgentTimeout.Get(c),
		MaxResponseSize: config.AgentMaxResponseSize.Get(c),
		StripANSI:       config.AgentStripANSI.Get(c),
		RawOutput:       config.AgentRawOutput.Get(c),
		DefaultModel:    config.AgentModel.Get(c),
		Models:          config.AgentModels.Get(c),
		StateDir:        c.Paths.State,
	}
}

// Result is what a run produced.
type Result struct {
	// Output is the reply as a client should read it: the kept stdout followed by Notice.
	Output string
	// Notice is what was appended to the kept stdout (truncation and timeout messages), or "".
	Notice string
	// Truncated is set when the output exceeded MaxResponseSize.
	Truncated bool
	// OriginalSize is the size of the whole (ANSI-stripped) output in bytes.
	OriginalSize int64
	// TimedOut is set when the run hit Limits.Timeout.
	TimedOut bool
	// ExitCode is the agent's exit status (-1 when it was killed by a signal or never ran).
	ExitCode int
	// Stderr is the agent's stderr (its last 64 KiB).
	Stderr string
	// Duration is the wall time of the run.
	Duration time.Duration
	// Argv is what was run.
	Argv []string
	// Tools are the tools the agent announced, in order, as they ended (read from its banners).
	Tools []ToolCall
}

// ToolUses returns the tools of the run as `ask --json` reports them.
func (r Result) ToolUses() []ToolUse {
	uses := make([]ToolUse, 0, len(r.Tools))
	for _, t := range r.Tools {
		uses = append(uses, ToolUse{Name: t.Name, Server: t.Server, Trusted: t.Trusted, Denied: t.Denied})
	}
	return uses
}

// Body returns the kept stdout without the notice.
func (r Result) Body() string { return strings.TrimSuffix(r.Output, r.Notice) }

// Argv returns the command line for r: the command, `chat --no-interactive`, the flags, and the
// prompt last (Description.ChatArgv).
func Argv(l Limits, r Request) []string { return Describe(l.Command).ChatArgv(r, model(l, r)) }

// PromptArgMax is the longest prompt passed as a command-line argument; a longer one is written to
// the agent's stdin. It stays well under Linux's 128 KiB limit for one argument, on every system,
// so a prompt travels the same way wherever qkit runs.
const PromptArgMax = 64 << 10

// PromptOnStdin reports whether r's prompt goes to the agent on stdin rather than as its last
// argument: a prompt too long for one argument, and a prompt that is exactly -h or --help, which
// q's wrapper would take for a help request (whatever comes before it) instead of sending it.
func PromptOnStdin(r Request) bool {
	return len(r.Prompt) > PromptArgMax || r.Prompt == "-h" || r.Prompt == "--help"
}

// PromptMax is the longest prompt qkit sends: q cuts a user message at 400,000 bytes ("...content
// truncated due to length") and kiro-cli documents the same, so a longer one is refused before
// anything runs rather than cut without a word.
const PromptMax = 400_000

// ErrPromptTooLong is returned (wrapped) for a prompt over PromptMax.
var ErrPromptTooLong = errors.New("prompt too long")

// ModelOf is the model r runs with: Request.Model, else Limits.DefaultModel ("" for the agent's
// own default).
func ModelOf(l Limits, r Request) string { return model(l, r) }

func model(l Limits, r Request) string {
	if r.Model != "" {
		return r.Model
	}
	return l.DefaultModel
}

// TrustList is --trust-tools as the agent takes it: the names of in (comma lists split, blanks
// left out), with an MCP tool given as server/tool (which qkit's own matching takes) spelled
// @server/tool, the only way the agent trusts it; no built-in tool name has a "/".
func TrustList(in []string) []string {
	out := cleanList(in)
	for i, n := range out {
		if !strings.HasPrefix(n, "@") && strings.Contains(n, "/") {
			out[i] = "@" + n
		}
	}
	return out
}

func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// ValidateChat is Validate for the chat backend: the agent must also have a chat mode (an ACP
// agent given as a command line has none: *NoChatError).
func ValidateChat(l Limits, r Request) error {
	if err := Validate(l, r); err != nil {
		return err
	}
	if d := Describe(l.Command); !d.HasChat() {
		return &NoChatError{Agent: d}
	}
	return nil
}

// ErrEmptyPrompt is returned for a blank prompt. Its text is the one MCP clients already know.
var ErrEmptyPrompt = fmt.Errorf("prompt is a required parameter and cannot be empty")

// Validate checks r against l before anything runs: a non-blank prompt, a known model, sane
// limits and a command.
func Validate(l Limits, r Request) error {
	if strings.TrimSpace(r.Prompt) == "" {
		return ErrEmptyPrompt
	}
	if n := len(r.Prompt); n > PromptMax {
		return fmt.Errorf("%w: the prompt is %d bytes, over the %d bytes the agent takes (it would cut the rest): "+
			"shorten it, or lower the context budget (qkit settings set context.max_tokens N; the context files count too, "+
			"see qkit context show, or use --no-context)", ErrPromptTooLong, n, PromptMax)
	}
	if strings.IndexByte(r.Prompt, 0) >= 0 {
		return fmt.Errorf("the prompt contains a NUL byte, which cannot be passed to the agent as a command-line argument")
	}
	for _, v := range []struct{ name, value string }{{"agent", r.Agent}, {"model", model(l, r)}} {
		if strings.HasPrefix(v.value, "-") {
			return fmt.Errorf("invalid %s %q: a name cannot start with \"-\"", v.name, v.value)
		}
	}
	for _, n := range TrustList(r.TrustTools) {
		if !PlainToolName(n) {
			return fmt.Errorf("invalid tool name %q to trust: the agent's --trust-tools takes plain names, "+
				"without control characters, escape sequences or spaces", n)
		}
	}
	if strings.TrimSpace(l.Command) == "" {
		return fmt.Errorf("agent.command is empty: set it with qkit settings set agent.command q (or kiro-cli)")
	}
	if len(l.Models) > 0 {
		// The setting's list; the agent's own is checked where a cache is at hand (ModelCache.Choices).
		choices, from := ModelCache{}.Choices(context.Background(), Limits{Models: l.Models})
		if err := CheckChoice(l.Command, model(l, r), choices, from); err != nil {
			return err
		}
	}
	if l.Timeout < 0 {
		return fmt.Errorf("invalid timeout %v: it must not be negative", l.Timeout)
	}
	if l.MaxResponseSize < 0 {
		return fmt.Errorf("invalid max response size %d: it must not be negative", l.MaxResponseSize)
	}
	return nil
}
