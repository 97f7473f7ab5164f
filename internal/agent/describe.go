package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kballard/go-shellquote"
)

// Kind is which agent a Description describes.
type Kind string

// The kinds of agent qkit knows how to drive.
const (
	// KindQ is the Amazon Q Developer CLI, q (on upgraded machines its entry points run kiro-cli),
	// and any single program agent.command names that is not kiro-cli: a wrapper of q.
	KindQ Kind = "q"
	// KindKiro is Kiro CLI, kiro-cli.
	KindKiro Kind = "kiro-cli"
	// KindACP is any other agent that speaks the Agent Client Protocol on stdio, given as its
	// whole command line (`goose acp`, `npx @zed-industries/claude-code-acp`).
	KindACP Kind = "acp"
)

// Description says how to drive one agent: how to start it in chat and in ACP mode, how to check
// its login, how to list its models, and what to call it. It is the only place that knows an
// agent's name and flags; everything else asks it.
//
// agent.command says which agent it is. A single program (a name on PATH or a path) is q, or
// kiro-cli by its name: both run `chat --no-interactive` and `acp`, take --agent, --model,
// --trust-all-tools and --trust-tools, answer `whoami` and (kiro-cli) `chat --list-models`. A
// command line with arguments is any other ACP agent, run as given: it has no chat mode, takes
// none of those flags (the model and the tools' permissions go through the ACP session), and
// checks its own login (its authMethods).
type Description struct {
	Kind Kind
	// Command is agent.command as given.
	Command string
	// Program is what runs: the command line's first word (a name on PATH or a path).
	Program string
	// Args follow Program to start the agent in ACP mode: `acp` for q and kiro-cli, the rest of
	// the command line for any other ACP agent.
	Args []string
}

// Describe reads agent.command. A value that, taken whole, names an existing file or a program on
// PATH is one program (a path with spaces keeps working unquoted); otherwise it is split as a
// shell would split it (quotes group words), and more than one word is an ACP agent's command
// line. A value that cannot be split (an unclosed quote) is one program, which then fails to
// start naming it.
func Describe(command string) Description {
	d := Description{Command: command, Program: strings.TrimSpace(command)}
	if words := commandWords(d.Program); len(words) > 1 {
		d.Kind, d.Program, d.Args = KindACP, words[0], words[1:]
		return d
	} else if len(words) == 1 {
		d.Program = words[0]
	}
	d.Kind, d.Args = KindQ, []string{"acp"}
	if strings.Contains(strings.ToLower(filepath.Base(d.Program)), "kiro") {
		d.Kind = KindKiro
	}
	return d
}

// commandWords splits a command line, unless it names a program as it stands.
func commandWords(s string) []string {
	if s == "" || !strings.ContainsAny(s, " \t\"'\\") {
		return []string{s}
	}
	if _, err := os.Stat(s); err == nil {
		return []string{s}
	}
	if _, err := exec.LookPath(s); err == nil {
		return []string{s}
	}
	words, err := shellquote.Split(s)
	if err != nil || len(words) == 0 || strings.TrimSpace(words[0]) == "" {
		return []string{s}
	}
	return words
}

// Name is what messages call the agent: its program's file name (q, kiro-cli), or, for another
// ACP agent, its command line.
func (d Description) Name() string {
	switch {
	case d.Kind == KindACP:
		return strings.Join(append([]string{filepath.Base(d.Program)}, d.Args...), " ")
	case d.Program == "":
		return "the agent"
	}
	return filepath.Base(d.Program)
}

// Builtin reports whether the agent is q or kiro-cli, whose flags, subcommands and wording qkit
// knows.
func (d Description) Builtin() bool { return d.Kind != KindACP }

// HasChat reports whether the agent has `chat --no-interactive` (the chat backend).
func (d Description) HasChat() bool { return d.Builtin() }

// LaunchFlags reports whether the agent takes --agent, --model, -a and --trust-tools when it is
// started in ACP mode (q and kiro-cli). Another ACP agent gets none: its model is set in the
// session, and the tools it asks about are answered by qkit's permission policy.
func (d Description) LaunchFlags() bool { return d.Builtin() }

// ChatArgv is the command line of one prompt on the chat backend (q and kiro-cli): `<program>
// chat --no-interactive [--resume] [--agent A] [--model M] [--trust-all-tools]
// [--trust-tools=a,b] [--verbose]`, then the prompt (after "--" when it starts with "-"), unless
// it goes on stdin (PromptOnStdin). model is the model to name, "" for none. An ACP agent given
// as a command line has no chat (HasChat): its command line would not run it.
func (d Description) ChatArgv(r Request, model string) []string {
	argv := []string{d.Program, "chat", "--no-interactive"}
	if r.Resume {
		argv = append(argv, "--resume")
	}
	if r.Agent != "" {
		argv = append(argv, "--agent", r.Agent)
	}
	if model != "" {
		argv = append(argv, "--model", model)
	}
	if r.TrustAll {
		argv = append(argv, "--trust-all-tools")
	}
	if tools := TrustList(r.TrustTools); len(tools) > 0 {
		argv = append(argv, "--trust-tools="+strings.Join(tools, ","))
	}
	if r.Verbose {
		argv = append(argv, "--verbose")
	}
	if PromptOnStdin(r) {
		return argv
	}
	if strings.HasPrefix(r.Prompt, "-") {
		argv = append(argv, "--")
	}
	return append(argv, r.Prompt)
}

// ACPArgv is the command line that starts the agent in ACP mode: `<program> acp [--agent A]
// [--model M] [-a] [--trust-tools=a,b]` for q and kiro-cli (the flags for its first session),
// the command line as given for another ACP agent (the flags are dropped: see LaunchFlags).
func (d Description) ACPArgv(agentName, model string, trustAll bool, trust []string) []string {
	argv := append([]string{d.Program}, d.Args...)
	if !d.LaunchFlags() {
		return argv
	}
	if agentName != "" {
		argv = append(argv, "--agent", agentName)
	}
	if model != "" {
		argv = append(argv, "--model", model)
	}
	if trustAll {
		argv = append(argv, "-a")
	}
	if tools := TrustList(trust); len(tools) > 0 {
		argv = append(argv, "--trust-tools="+strings.Join(tools, ","))
	}
	return argv
}

// WhoamiArgs are the arguments of the agent's login check (`whoami`); nil when it has none (an
// ACP agent checks its own login and says so in initialize's authMethods).
func (d Description) WhoamiArgs() []string {
	if !d.Builtin() {
		return nil
	}
	return []string{"whoami"}
}

// ListModelsArgs are the arguments that make the agent print its models as JSON (`chat
// --list-models --format json`; q 1.19.7 refuses the flag); nil when it has no such command (an
// ACP agent lists its models in each session).
func (d Description) ListModelsArgs() []string {
	if !d.Builtin() {
		return nil
	}
	return []string{"chat", "--list-models", "--format", "json"}
}

// LoginMethod is the auth method the agent lists in initialize when nobody is logged in and no
// login can happen over ACP: kiro-cli's v2 engine lists "kiro-login" (q runs kiro-cli on upgraded
// machines). "" for another ACP agent, whose methods are its own to offer.
func (d Description) LoginMethod() string {
	if !d.Builtin() {
		return ""
	}
	return "kiro-login"
}

// LoginHint says how to log in to the agent.
func (d Description) LoginHint() string {
	name := d.Name()
	switch d.Kind {
	case KindKiro:
		return fmt.Sprintf("run %s login in a terminal, or set KIRO_API_KEY in the environment for headless use (CI)", name)
	case KindQ:
		return fmt.Sprintf("run %s login in a terminal (where %s runs kiro-cli: kiro-cli login, or KIRO_API_KEY for headless use)", name, name)
	}
	return fmt.Sprintf("log in the way %s documents (in an editor through qkit acp serve, it offers its own login methods)", name)
}

// NoChatError is the chat backend asked of an agent that has no chat mode (an ACP agent given as
// a command line).
type NoChatError struct{ Agent Description }

func (e *NoChatError) Error() string {
	return fmt.Sprintf("%s is an ACP agent: it has no chat --no-interactive, so the chat backend cannot run it; "+
		"use agent.backend acp or auto (qkit settings set agent.backend auto, or qkit ask --backend acp)", e.Agent.Name())
}
