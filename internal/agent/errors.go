package agent

import (
	"fmt"
	"strings"
)

// UntrustedToolError is a run that needed a tool it was not allowed to use in --no-interactive
// mode. With kiro-cli 2.x the tool was denied and the model carried on (exit 0, Denied); with q
// 1.19.7 the run stopped with q's approval error (exit 1). Either way the reply is not what was
// asked for, and the fix is to trust the tools under TrustTools (a front end that can ask a
// person, such as an ACP editor, asks and runs again with them trusted).
//
// q's approval error after a tool that was already trusted (its stream-failure quirk) is not this
// error: that is an ordinary failure.
type UntrustedToolError struct {
	// Command is the agent CLI (agent.command).
	Command string
	// Tools are the untrusted tools, in the order the agent announced them; a Name is empty when
	// the agent did not say which tool it wanted.
	Tools []ToolCall
	// Denied: the agent refused the tools and went on (kiro-cli); false: it stopped (q).
	Denied bool
	// Message is the agent's own error line, if it printed one (q's approval error).
	Message string
	// Bare are the MCP tools among Tools that the request trusted by their bare name, which the
	// agent ignores.
	Bare []ToolCall
	// Trusted is what the request trusted (its --trust-tools, as given), for the hint.
	Trusted []string
}

// Tool is the last untrusted tool, the one a person is asked about first.
func (e *UntrustedToolError) Tool() ToolCall { return e.Tools[len(e.Tools)-1] }

// TrustNames are the names to trust, as --trust-tools takes them ("@server/tool" for MCP tools),
// without duplicates, unknown (empty) names, or the names of tools --trust-tools cannot name
// (Untrustable).
func (e *UntrustedToolError) TrustNames() []string {
	var names []string
	for _, t := range e.Tools {
		if n := t.TrustName(); t.Trustable() && !contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Untrustable are the tools the agent named with a name --trust-tools cannot carry (see
// ToolCall.Trustable): only trusting every tool lets them run.
func (e *UntrustedToolError) Untrustable() []ToolCall {
	var out []ToolCall
	for _, t := range e.Tools {
		if t.Name != "" && !t.Trustable() {
			out = append(out, t)
		}
	}
	return out
}

// TrustTools is the exact agent flag that trusts the tools: "--trust-tools=a,@srv/b", or
// "--trust-all-tools" when the agent did not name the tool.
func (e *UntrustedToolError) TrustTools() string {
	names := e.TrustNames()
	if len(names) == 0 { // unnamed, or named in a way --trust-tools cannot carry
		return "--trust-all-tools"
	}
	return "--trust-tools=" + strings.Join(names, ",")
}

func (e *UntrustedToolError) Error() string {
	var labels []string
	for _, t := range e.Tools {
		if t.Name != "" {
			labels = append(labels, t.TrustName())
		}
	}
	what := "a tool it did not name"
	if len(labels) == 1 {
		what = "tool " + labels[0]
	} else if len(labels) > 1 {
		what = "tools " + strings.Join(labels, ", ")
	}
	var msg string
	if e.Denied {
		msg = fmt.Sprintf("%s refused %s, which is not trusted in --no-interactive mode, so the reply was made without it",
			commandName(e.Command), what)
	} else {
		msg = fmt.Sprintf("%s needed approval for %s, which --no-interactive cannot give", commandName(e.Command), what)
	}
	if e.Message != "" {
		msg += " (" + e.Message + ")"
	}
	for _, t := range e.Bare {
		msg += fmt.Sprintf("; %s was trusted by its bare name, but an MCP tool is trusted only as %s or @%s", t.Name, t.TrustName(), t.Server)
	}
	return msg
}

// Hint says how to let the tools run, in the words of a front end's flags (TrustHint).
func (e *UntrustedToolError) Hint(f TrustFlags) string {
	odd := e.Untrustable()
	names := e.TrustNames()
	if len(odd) == 0 || len(names) > 0 {
		h := TrustHint(e.Trusted, names, f)
		for _, t := range odd {
			h += "; " + UntrustableHint(t, f)
		}
		return h
	}
	var hints []string
	for _, t := range odd {
		hints = append(hints, UntrustableHint(t, f))
	}
	return strings.Join(hints, "; ")
}

// UntrustableHint says why t cannot be trusted by name (Trustable is false): the name shown is
// filtered, so it is not the one the agent trusts. Only f.All allows it.
func UntrustableHint(t ToolCall, f TrustFlags) string {
	return fmt.Sprintf("the agent's own name for %s holds characters that %s cannot carry (a control or escape "+
		"sequence, a comma or a space), so it cannot be trusted by name: only %s allows it", t.TrustName(), f.ByName, f.All)
}

// TrustFlags names a front end's options for trusting tools, for TrustHint.
type TrustFlags struct {
	// ByName takes tool names: "--trust-tools" (qkit ask), "trust-tools" (the MCP tool).
	ByName string
	// All trusts every tool: "--yolo", "yolo-mode true".
	All string
	// Deny refuses tools by name and OnPermission decides what nothing covers: "--deny-tools"
	// and "--on-permission" for qkit ask; "" for a front end without them.
	Deny, OnPermission string
}

// CLITrustFlags are qkit ask's.
var CLITrustFlags = TrustFlags{ByName: "--trust-tools", All: "--yolo", Deny: "--deny-tools", OnPermission: "--on-permission"}

// Or is f, or qkit ask's flags when f is the zero TrustFlags.
func (f TrustFlags) Or() TrustFlags {
	if f == (TrustFlags{}) {
		return CLITrustFlags
	}
	return f
}

// TrustHint is the one wording every front end uses to say how to let tools run next time, with
// the whole value to pass: what the run trusted already (trusted, as given) and the tools it
// lacked (names, see MergeTrust): "to allow it, run again with --trust-tools fs_read,shell (or
// --yolo to trust every tool)"; without names (the agent did not say which tool), "to allow it,
// run again with --yolo (the agent did not say which tool it wanted)".
func TrustHint(trusted, names []string, f TrustFlags) string {
	if len(names) == 0 {
		return "to allow it, run again with " + f.All + " (the agent did not say which tool it wanted)"
	}
	return "to allow it, run again with " + f.ByName + " " + strings.Join(MergeTrust(trusted, names), ",") + " (or " + f.All + " to trust every tool)"
}

// MergeTrust is the list of tools to trust so that names run too: trusted (--trust-tools as
// given, read as TrustList reads it) in order, then the names it lacks, each once (case aside).
// A bare name that one of names now gives in full ("status" for "@git/status") goes: the agent
// ignores it for an MCP tool.
func MergeTrust(trusted, names []string) []string {
	drop := map[string]bool{}
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "@"); ok {
			if _, tool, ok := strings.Cut(rest, "/"); ok {
				drop[strings.ToLower(tool)] = true
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		n = strings.TrimSpace(n)
		if k := strings.ToLower(n); n != "" && !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	for _, n := range TrustList(trusted) {
		if !drop[strings.ToLower(n)] {
			add(n)
		}
	}
	for _, n := range names {
		add(n)
	}
	return out
}

// AgentNotFoundError is an --agent the agent CLI does not know: q warns and falls back to its
// default agent (exit 0), kiro-cli exits 4.
type AgentNotFoundError struct {
	Command string
	Agent   string
}

func (e *AgentNotFoundError) Error() string {
	return fmt.Sprintf("%s has no agent named %q (--agent); its agents are the JSON files in ~/.aws/amazonq/cli-agents "+
		"(q) or ~/.kiro/agents (kiro-cli) and the project's .amazonq/cli-agents or .kiro/agents", commandName(e.Command), e.Agent)
}

// LoginError is an agent that is not logged in, or whose login was refused.
type LoginError struct {
	Command string
	// Detail is what the agent said, or why qkit stopped it (the device-login flow).
	Detail string
}

func (e *LoginError) Error() string {
	msg := fmt.Sprintf("%s is not logged in", commandName(e.Command))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg + ": " + LoginHint(e.Command)
}

// LoginHint says how to log in to the agent CLI command (Description.LoginHint).
func LoginHint(command string) string { return Describe(command).LoginHint() }

// MissingCommandError is an agent CLI that is not installed (or not where agent.command says).
type MissingCommandError struct{ Command string }

func (e *MissingCommandError) Error() string {
	if d := Describe(e.Command); d.Kind == KindACP {
		return fmt.Sprintf("agent command %q not found (agent.command %q): install it, or set agent.command to the "+
			"agent's command line (qkit settings set agent.command 'goose acp')", d.Program, e.Command)
	}
	if strings.Contains(commandName(e.Command), "kiro") {
		// agent.command already names kiro-cli: suggesting it again would send the user in a circle.
		return fmt.Sprintf("agent command %q not found: install Kiro CLI (or put it on PATH), or set agent.command "+
			"to the binary to run (qkit settings set agent.command /path/to/kiro-cli, or qkit settings set agent.command q "+
			"for the Amazon Q Developer CLI)", e.Command)
	}
	return fmt.Sprintf("agent command %q not found: install the Amazon Q Developer CLI (or Kiro CLI), or set agent.command "+
		"to the binary to run (qkit settings set agent.command kiro-cli, or QKIT_AGENT_COMMAND=/path/to/q)", e.Command)
}

// ReplyError is a failure the agent reported on stderr while exiting 0 (an expired login, an API
// error), possibly after part of a reply: the reply is in the run's Result, and is not complete.
type ReplyError struct {
	Command string
	// Message is the agent's failure lines.
	Message string
	// Partial is set when some reply came before the failure.
	Partial bool
}

func (e *ReplyError) Error() string {
	if e.Partial {
		return fmt.Sprintf("%s failed after a partial reply: %s", commandName(e.Command), e.Message)
	}
	return fmt.Sprintf("%s failed: %s", commandName(e.Command), e.Message)
}

func commandName(command string) string {
	if command == "" {
		return "the agent"
	}
	return Describe(command).Name()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
