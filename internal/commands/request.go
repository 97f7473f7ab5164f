package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/qkit-cli/qkit/internal/output"
)

// Request is one internal command as an assistant asks for it (the internal_command tool's input):
// {"command": "context", "subcommand": "add", "args": ["notes.md"], "flags": {"force": ""}}.
// A flag with an empty value is given bare (--force); any other value as --name=value.
type Request struct {
	Command    string            `json:"command"`
	Subcommand string            `json:"subcommand,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Flags      map[string]string `json:"flags,omitempty"`
}

// maxRequestSize bounds a request document; a real one is a few hundred bytes.
const maxRequestSize = 1 << 20

// ParseRequest decodes a JSON request strictly: unknown fields, trailing data and a missing command
// are usage errors (exit 2). Its messages call the document "request".
func ParseRequest(data []byte) (Request, error) { return ParseRequestNamed(data, "request") }

// requestShape is what a request looks like, for messages about one that does not.
const requestShape = `{"command": "settings", "subcommand": "get", "args": ["agent.timeout"], "flags": {"json": ""}}`

// ParseRequestNamed is ParseRequest with the name its messages give the document (where it came
// from: "--request", "the request on stdin").
func ParseRequestNamed(data []byte, name string) (Request, error) {
	var req Request
	if len(data) > maxRequestSize {
		return req, output.UsageErrorf("%s: larger than %d bytes", name, maxRequestSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) || len(bytes.TrimSpace(data)) == 0 {
			return req, output.UsageErrorf("%s: empty; expected a JSON object such as %s", name, requestShape)
		}
		return req, output.UsageErrorf("%s: %s", name, requestProblem(err, data))
	}
	if dec.More() {
		return req, output.UsageErrorf("%s: unexpected data after the JSON object; give one object such as %s", name, requestShape)
	}
	if strings.TrimSpace(req.Command) == "" {
		return req, output.UsageErrorf("%s: \"command\" is required, as in %s", name, requestShape)
	}
	return req, nil
}

// requestProblem says in a person's words what a JSON decoder error means for the request data.
func requestProblem(err error, data []byte) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		if text := bytes.TrimSpace(data); len(text) <= 60 {
			return fmt.Sprintf("%q is not JSON (it goes wrong at byte %d); expected a JSON object such as %s", text, syntax.Offset, requestShape)
		}
		at := max(0, min(int(syntax.Offset)-1, len(data)))
		return fmt.Sprintf("not JSON: it goes wrong at byte %d (%q); expected a JSON object such as %s", syntax.Offset, data[at:min(at+20, len(data))], requestShape)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends before the object does; expected a JSON object such as " + requestShape
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("a JSON %s, not an object; expected a JSON object such as %s", typ.Value, requestShape)
	case errors.As(err, &typ):
		want := map[string]string{"command": "a string", "subcommand": "a string", "args": "a list of strings", "flags": "an object of strings"}
		field, _, _ := strings.Cut(typ.Field, ".")
		if w, ok := want[field]; ok {
			return fmt.Sprintf("%q must be %s, not a JSON %s", field, w, typ.Value)
		}
		return fmt.Sprintf("%q holds a JSON %s of the wrong type", typ.Field, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ") + "; the fields are command, subcommand, args and flags"
	}
	return err.Error()
}

// String shows the request as a command line, for messages.
func (q Request) String() string {
	words := []string{q.Command}
	if q.Subcommand != "" {
		words = append(words, q.Subcommand)
	}
	words = append(words, q.Args...)
	for _, name := range slices.Sorted(maps.Keys(q.Flags)) {
		if v := q.Flags[name]; v != "" {
			words = append(words, "--"+strings.TrimLeft(name, "-")+"="+v)
		} else {
			words = append(words, "--"+strings.TrimLeft(name, "-"))
		}
	}
	return shellquote.Join(words...)
}

// FromWords builds a request from positional words (command, then subcommand when the command is a
// group, then arguments) and flags: what `qkit exec internal` gets on its command line.
func (r *Registry) FromWords(words []string, flags map[string]string) Request {
	req := Request{Flags: flags}
	if len(words) == 0 {
		return req
	}
	req.Command = normalizeCommand(words[0])
	rest := words[1:]
	top, ok := r.index().byName[req.Command]
	if len(rest) > 0 && (req.Command == HelpName || ok && len(top.Children) > 0) {
		req.Subcommand, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		req.Args = append([]string(nil), rest...)
	}
	return req
}

// ParseLine parses a chat slash-command line such as `/context add "my notes.md" --force` into a
// request. Words are split as a POSIX shell would split them (quotes, backslashes) but nothing is
// expanded or executed. A flag takes the next word as its value when the command's flag takes one;
// `--` ends the flags.
func (r *Registry) ParseLine(line string) (Request, error) {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "/")
	words, err := shellquote.Split(line)
	if err != nil {
		return Request{}, output.UsageErrorf("cannot parse %q: %v", line, err)
	}
	if len(words) == 0 {
		return Request{}, output.UsageErrorf("empty command line; %s", r.availableText())
	}
	var positional []string
	flags := map[string]string{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			positional = append(positional, words[i+1:]...)
			break
		}
		if len(w) < 2 || w[0] != '-' || i == 0 {
			positional = append(positional, w)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		f, known := r.flagFor(positional, name)
		if known {
			name = f.Name
		}
		if !hasValue && known && !f.NoValue && i+1 < len(words) {
			i++
			value = words[i]
		}
		flags[name] = value
	}
	if len(flags) == 0 {
		flags = nil
	}
	return r.FromWords(positional, flags), nil
}

// flagFor finds flag name on the deepest entry the positional words so far reach.
func (r *Registry) flagFor(positional []string, name string) (Flag, bool) {
	e := r.resolve(positional)
	if e == nil {
		return Flag{}, false
	}
	return e.flag(name)
}

// resolve returns the deepest entry words lead to, or nil.
func (r *Registry) resolve(words []string) *Entry {
	var cur *Entry
	for i, w := range words {
		name := w
		if i == 0 {
			name = normalizeCommand(w)
		} else {
			name = cur.Name + " " + w
		}
		next, ok := r.index().byName[name]
		if !ok {
			break
		}
		cur = next
	}
	return cur
}

func normalizeCommand(s string) string {
	return strings.TrimPrefix(strings.TrimSpace(s), "/")
}

// Call is a validated request, ready to run.
type Call struct {
	Entry Entry
	// Argv is what runs, below the program name: ["context", "add", "notes.md"].
	Argv []string
	// CommandLine is Argv as the user would type it: `qkit context add notes.md`.
	CommandLine string
	Access      Access
	// Trusted is set when a change needs no confirmation because of internal.trusted.
	Trusted bool
	// NeedsConfirmation is set for a change that is not trusted.
	NeedsConfirmation bool
	// Guarded is set for a change that internal.trusted can never waive: one that reaches
	// internal.trusted or agent.command (settings reset --all reaches both). Only the user's own
	// confirmation lets it run.
	Guarded bool
	// listing is set for a bare `help`: the registry's own list, nothing runs.
	listing bool
}

// Prepare validates a request against the registry and the command's own parser. Every error is a
// usage error (exit 2) that says plainly what is wrong; nothing has run.
func (r *Registry) Prepare(req Request) (*Call, error) {
	if words := strings.Fields(normalizeCommand(req.Command)); len(words) > 1 {
		// {"command": "context add"}: assistants often put the whole command in one field.
		rest := words[1:]
		if sub := strings.TrimSpace(req.Subcommand); sub != "" {
			rest = append(rest, sub)
		}
		req.Command, req.Subcommand, req.Args = words[0], "", append(rest, req.Args...)
	}
	command := normalizeCommand(req.Command)
	if command == "" {
		return nil, output.UsageErrorf("a command is required; %s", r.availableText())
	}
	if command == HelpName {
		return r.prepareHelp(req)
	}
	cur, ok := r.index().byName[command]
	if !ok || len(cur.Path) != 1 {
		return nil, output.WithCode(output.ExitUsage, &UnknownCommandError{Command: command, Available: r.TopLevel()})
	}
	path := []string{command}
	args := req.Args
	if sub := strings.TrimSpace(req.Subcommand); sub != "" {
		if len(cur.Children) == 0 {
			return nil, output.UsageErrorf("%q has no subcommands; pass %q as an argument instead", cur.Name, sub)
		}
		next, ok := r.index().byName[cur.Name+" "+sub]
		if !ok {
			return nil, output.UsageErrorf("unknown subcommand %q for %q; available: %s", sub, cur.Name, strings.Join(cur.Children, ", "))
		}
		cur, path = next, append(path, sub)
	}
	for len(args) > 0 && len(cur.Children) > 0 {
		next, ok := r.index().byName[cur.Name+" "+args[0]]
		if !ok {
			break
		}
		cur, path, args = next, append(path, args[0]), args[1:]
	}

	flagArgs, access, help, err := r.flagArgs(cur, req.Flags)
	if err != nil {
		return nil, err
	}
	if !cur.Runnable && !help {
		if len(args) > 0 {
			return nil, output.UsageErrorf("unknown subcommand %q for %q; available: %s", args[0], cur.Name, strings.Join(cur.Children, ", "))
		}
		return nil, output.UsageErrorf("%q needs a subcommand: %s", cur.Name, strings.Join(cur.Children, ", "))
	}
	argv := append(append([]string(nil), path...), flagArgs...)
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' {
			// An argument is never read as a flag: that would bypass the checks above.
			argv = append(argv, "--")
			break
		}
	}
	argv = append(argv, args...)
	if err := r.exec.Check(argv); err != nil {
		return nil, output.UsageErrorf("%s: %v", cur.Name, err)
	}
	call := &Call{Entry: *cur, Argv: argv, CommandLine: CommandLine(argv), Access: access}
	if access == Change {
		// Trust never extends to changing the trust list itself: an assistant trusted with
		// "settings" must still ask before it widens what it may do unasked.
		call.Guarded = mentionsGuarded(argv) || guardedFlagGiven(cur, req.Flags)
		call.Trusted = r.Trusted(cur.Name) && !call.Guarded
		call.NeedsConfirmation = !call.Trusted
	}
	return call, nil
}

// flagArgs turns the request's flags into argv words, checking each name against the entry. It
// reports the access the flags give (a change flag makes a read a change) and whether --help is
// among them.
func (r *Registry) flagArgs(e *Entry, flags map[string]string) ([]string, Access, bool, error) {
	access := e.Access
	var argv []string
	help := false
	given := map[string]string{} // long name -> value
	for _, raw := range slices.Sorted(maps.Keys(flags)) {
		name := strings.TrimLeft(strings.TrimSpace(raw), "-")
		if name == "help" || name == "h" {
			help = true
			continue
		}
		f, ok := e.flag(name)
		if !ok {
			return nil, "", false, output.UsageErrorf("unknown flag %q for %q; %s", "--"+name, e.Name, flagsText(e))
		}
		given[f.Name] = flags[raw]
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		value := given[name]
		f, _ := e.flag(name)
		if f.NoValue && value == "" {
			argv = append(argv, "--"+f.Name)
		} else {
			argv = append(argv, "--"+f.Name+"="+value)
		}
		if f.Change && !(f.NoValue && isFalse(value)) {
			access = Change
		}
	}
	if help {
		return []string{"--help"}, Read, true, nil
	}
	return argv, access, false, nil
}

func isFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "0", "f":
		return true
	}
	return false
}

func flagsText(e *Entry) string {
	if len(e.Flags) == 0 {
		return "it takes no flags"
	}
	names := make([]string, len(e.Flags))
	for i, f := range e.Flags {
		names[i] = "--" + f.Name
	}
	return "it accepts: " + strings.Join(names, ", ")
}

func (r *Registry) prepareHelp(req Request) (*Call, error) {
	if len(req.Flags) > 0 {
		return nil, output.UsageErrorf("help takes no flags")
	}
	var topic []string
	if s := strings.TrimSpace(req.Subcommand); s != "" {
		topic = append(topic, s)
	}
	topic = append(topic, req.Args...)
	if len(topic) == 0 {
		return &Call{
			Entry: *r.index().byName[HelpName], Argv: []string{HelpName}, CommandLine: "qkit exec internal --list",
			Access: Read, listing: true,
		}, nil
	}
	name := strings.Join(topic, " ")
	e, ok := r.index().byName[name]
	if !ok || name == HelpName {
		return nil, output.UsageErrorf("no help for %q: not an exposed command; %s", name, r.availableText())
	}
	argv := append([]string{HelpName}, e.Path...)
	return &Call{Entry: *r.index().byName[HelpName], Argv: argv, CommandLine: CommandLine(argv), Access: Read}, nil
}

// TrustSetting is the setting that lists the changes needing no confirmation.
const TrustSetting = "internal.trusted"

// guardedSettings are the settings trust never covers a change to: the trust list itself, and the
// program qkit runs as the agent (changing it unasked would let an assistant pick what the next
// `qkit ask` executes).
var guardedSettings = []string{TrustSetting, "agent.command"}

func mentionsGuarded(argv []string) bool {
	for _, a := range argv {
		for _, g := range guardedSettings {
			if strings.Contains(a, g) {
				return true
			}
		}
	}
	return false
}

// guardedFlagGiven reports whether flags turn on one of e's guarded flags (settings reset --all).
func guardedFlagGiven(e *Entry, flags map[string]string) bool {
	for raw, value := range flags {
		f, ok := e.flag(strings.TrimLeft(strings.TrimSpace(raw), "-"))
		if ok && f.Guarded && !(f.NoValue && isFalse(value)) {
			return true
		}
	}
	return false
}

// CommandLine shows argv as the user would type it, quoted for a POSIX shell.
func CommandLine(argv []string) string {
	return "qkit " + shellquote.Join(argv...)
}

// Display is the command line as every door shows it to a person (the CLI's question, MCP's
// elicitation, ACP's permission request, the declined message, Result.Message, HowToConfirm): in
// double quotes, Go-quoted. The arguments come from an assistant, and one holding ESC[2K and a
// carriage return would otherwise erase the real question on a terminal and draw a
// harmless-looking one; quoted, every control character, C1 control, bidirectional override and
// byte that is not UTF-8 shows as an escape (\x1b, \r, \u202e), as termtext.VisibleLine would show
// it, and a double quote inside shows as \", so the closing quote is always the real one. An
// ordinary command line only gains the quotes.
func (c *Call) Display() string { return display(c.CommandLine) }

// display is Call.Display for a command line alone (Result.Message has no Call).
func display(commandLine string) string { return strconv.Quote(commandLine) }

// UnknownCommandError is a request for a command that is not exposed; it lists the ones that are.
type UnknownCommandError struct {
	Command   string
	Available []string
}

func (e *UnknownCommandError) Error() string {
	return "Unknown command: " + e.Command + ". Available commands: " + strings.Join(e.Available, ", ")
}

func (r *Registry) availableText() string {
	return "Available commands: " + strings.Join(r.TopLevel(), ", ")
}

// ErrConfirmationNeeded is returned by Run for a change without a way to confirm it.
var ErrConfirmationNeeded = errors.New("needs the user's confirmation")

// ConfirmationNeededError says which command needs confirmation and how to give it. Front ends
// return its text to the assistant.
func ConfirmationNeededError(c *Call, how string) error {
	return output.WithCode(output.ExitUsage, fmt.Errorf("%s changes state and needs the user's confirmation: %s (%w)", c.Display(), how, ErrConfirmationNeeded))
}
