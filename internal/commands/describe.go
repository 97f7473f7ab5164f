package commands

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Example maps something a user might say to the request that does it.
type Example struct {
	Say     string
	Request Request
}

// examples are the mappings the tool description offers. Only those the registry can run are shown,
// so the description never advertises a command or flag that is not there.
var examples = []Example{
	{"Add this file to my context", Request{Command: "context", Subcommand: "add", Args: []string{"file.txt"}}},
	{"Add all the docs to every profile's context", Request{Command: "context", Subcommand: "add", Args: []string{"docs/**/*.md"}, Flags: map[string]string{"global": ""}}},
	{"What files are in my context?", Request{Command: "context", Subcommand: "show"}},
	{"What exactly would be sent to Q if I said hello?", Request{Command: "context", Subcommand: "prompt", Args: []string{"hello"}}},
	{"Stop sending file.txt with my prompts", Request{Command: "context", Subcommand: "rm", Args: []string{"file.txt"}}},
	{"Clear my context", Request{Command: "context", Subcommand: "clear"}},
	{"Make a context profile for my work project", Request{Command: "context", Subcommand: "profile", Flags: map[string]string{"create": "work"}}},
	{"Which context profiles do I have?", Request{Command: "context", Subcommand: "profile"}},
	{"Switch to my work profile", Request{Command: "context", Subcommand: "switch", Args: []string{"work"}}},
	{"Show me qkit's settings", Request{Command: "settings", Subcommand: "list"}},
	{"How long may the agent run?", Request{Command: "settings", Subcommand: "get", Args: []string{"agent.timeout"}}},
	{"Use kiro-cli instead of q", Request{Command: "settings", Subcommand: "set", Args: []string{"agent.command", "kiro-cli"}}},
	{"Put the agent timeout back to its default", Request{Command: "settings", Subcommand: "reset", Args: []string{"agent.timeout"}}},
	{"Are there questions waiting for me?", Request{Command: "questions", Subcommand: "list"}},
	{"Show me the questions I have to answer", Request{Command: "questions", Subcommand: "show"}},
	{"Which conversations with the agent do I have?", Request{Command: "sessions", Subcommand: "list"}},
	{"Show me the conversation 3f2a", Request{Command: "sessions", Subcommand: "show", Args: []string{"3f2a"}}},
	{"Save the conversation 3f2a as Markdown", Request{Command: "sessions", Subcommand: "export", Args: []string{"3f2a"}, Flags: map[string]string{"format": "md", "output": "3f2a.md"}}},
	{"Import the conversation in fix-login.json", Request{Command: "sessions", Subcommand: "import", Args: []string{"fix-login.json"}}},
	{"Delete the conversation 3f2a", Request{Command: "sessions", Subcommand: "rm", Args: []string{"3f2a"}}},
	{"Remove the conversations not used for a month", Request{Command: "sessions", Subcommand: "prune", Flags: map[string]string{"older-than": "30d"}}},
	{"Which MCP tools does qkit serve?", Request{Command: "mcp", Subcommand: "tools"}},
	{"How do I use the ask_user_questions tool?", Request{Command: "mcp", Subcommand: "tools", Args: []string{"help", "ask_user_questions"}}},
	{"Which qkit version is this?", Request{Command: "version"}},
	{"Why does qkit not work?", Request{Command: "doctor"}},
	{"How do I add context files?", Request{Command: "help", Subcommand: "context", Args: []string{"add"}}},
}

// Examples returns the example mappings whose command and flags the registry has.
func (r *Registry) Examples() []Example {
	var out []Example
	for _, ex := range examples {
		if r.fits(ex.Request) {
			out = append(out, ex)
		}
	}
	return out
}

// fits reports whether a request names an entry and flags the registry has (without running the
// command's parser).
func (r *Registry) fits(q Request) bool {
	if q.Command == HelpName {
		_, ok := r.index().byName[strings.Join(append([]string{q.Subcommand}, q.Args...), " ")]
		return ok
	}
	name := q.Command
	if q.Subcommand != "" {
		name += " " + q.Subcommand
	}
	e, ok := r.index().byName[name]
	if !ok || !e.Runnable {
		return false
	}
	for f := range q.Flags {
		if _, ok := e.flag(f); !ok {
			return false
		}
	}
	return true
}

// ExampleJSON shows an example request as the tool's arguments.
func (ex Example) ExampleJSON() string {
	parts := []string{fmt.Sprintf("command=%q", ex.Request.Command)}
	if ex.Request.Subcommand != "" {
		parts = append(parts, fmt.Sprintf("subcommand=%q", ex.Request.Subcommand))
	}
	if len(ex.Request.Args) > 0 {
		quoted := make([]string, len(ex.Request.Args))
		for i, a := range ex.Request.Args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		parts = append(parts, "args=["+strings.Join(quoted, ", ")+"]")
	}
	if len(ex.Request.Flags) > 0 {
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(ex.Request.Flags)) {
			fs = append(fs, fmt.Sprintf("%q: %q", k, ex.Request.Flags[k]))
		}
		parts = append(parts, "flags={"+strings.Join(fs, ", ")+"}")
	}
	return strings.Join(parts, ", ")
}

// Summary is the first line of the internal_command tool's description.
const Summary = "Run one of qkit's own commands on the user's behalf."

// Describe is the description of the internal_command tool, generated from the registry: what it is
// for, every command with its purpose, usage and whether it needs confirmation, and example mappings.
func (r *Registry) Describe() string {
	if r.opts.Description != "" {
		return r.opts.Description
	}
	var b strings.Builder
	b.WriteString(Summary + `

Use it when the user asks for something a command below does (manage the context files sent with every prompt, read or change qkit's settings, look at pending questions, list, show, export or remove conversations with the agent, and more), instead of telling them which command to type.

Commands that only read run at once. Commands marked "change" need the user's confirmation: the user is asked when the client supports it; otherwise the call fails and says so (the user can list a command in the setting internal.trusted to allow it without asking). Arguments are passed as they are, never through a shell. A flag with an empty value is given bare: flags={"global": ""} means --global. For a command of three words such as "mcp tools help", put the third word first in args: command="mcp", subcommand="tools", args=["help", "internal_command"].

Available commands:
`)
	for _, e := range r.Runnable() {
		fmt.Fprintf(&b, "- %s (%s): %s\n  Usage: %s\n", e.Name, e.Access, e.Short, e.Usage)
		var flags, changes []string
		for _, f := range e.Flags {
			if f.NoValue {
				flags = append(flags, "--"+f.Name)
			} else {
				flags = append(flags, "--"+f.Name+"="+f.Type)
			}
			if f.Change {
				changes = append(changes, "--"+f.Name)
			}
		}
		if len(flags) > 0 {
			fmt.Fprintf(&b, "  Flags: %s\n", strings.Join(flags, ", "))
		}
		if len(changes) > 0 {
			fmt.Fprintf(&b, "  With %s it is a change.\n", strings.Join(changes, ", "))
		}
	}
	if exs := r.Examples(); len(exs) > 0 {
		b.WriteString("\nExamples:\n")
		for _, ex := range exs {
			fmt.Fprintf(&b, "- %q -> %s\n", ex.Say, ex.ExampleJSON())
		}
	}
	return b.String()
}
