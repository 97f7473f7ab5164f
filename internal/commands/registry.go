package commands

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Access says what running a command does.
type Access string

// The kinds of access.
const (
	// Read commands only look; they run at once.
	Read Access = "read"
	// Change commands change state; they need the user's confirmation (or internal.trusted).
	Change Access = "change"
)

// Flag describes one flag an exposed command accepts.
type Flag struct {
	Name      string `json:"name"`
	Shorthand string `json:"shorthand,omitempty"`
	// Type is the flag's value type as the command parser names it: bool, string, stringArray, int...
	Type    string `json:"type"`
	Usage   string `json:"usage"`
	Default string `json:"default,omitempty"`
	// NoValue is set for flags given without a value (booleans): {"all": ""} becomes --all.
	NoValue bool `json:"no_value,omitempty"`
	// Change is set for the flags that turn a read command into a change.
	Change bool `json:"change,omitempty"`
	// Guarded is set for the flags with which a change reaches a setting trust never covers
	// (settings reset --all resets internal.trusted and agent.command too).
	Guarded bool `json:"guarded,omitempty"`
}

// Entry is one command of the tree as the registry sees it.
type Entry struct {
	// Path is the command's words below the root, e.g. ["context", "add"].
	Path []string `json:"-"`
	// Name is Path joined by spaces: "context add".
	Name  string `json:"name"`
	Short string `json:"description"`
	// Usage is the command's usage line without the program name: "context add <path>...".
	Usage   string `json:"usage"`
	Example string `json:"example,omitempty"`
	// Access is Read or Change. Groups (Runnable false) have none.
	Access Access `json:"access,omitempty"`
	// Runnable is false for a group that only holds exposed subcommands (e.g. "context" when only its
	// subcommands run).
	Runnable bool   `json:"runnable"`
	Flags    []Flag `json:"flags,omitempty"`
	// Children names the exposed subcommands of a group.
	Children []string `json:"subcommands,omitempty"`
}

// flag returns the entry's flag called name (long name, or shorthand).
func (e *Entry) flag(name string) (Flag, bool) {
	for _, f := range e.Flags {
		if f.Name == name || (f.Shorthand != "" && f.Shorthand == name) {
			return f, true
		}
	}
	return Flag{}, false
}

// Executor checks and runs one argv (below the program name) against a fresh command tree. cmd/
// implements it on the cobra tree.
type Executor interface {
	// Check parses argv's flags and arguments as the command itself would, without running it. The
	// error says what is wrong in the command parser's words.
	Check(argv []string) error
	// Run executes argv in-process and returns what it printed and its exit code. source is "cli",
	// "mcp" or "acp"; dir is the working directory relative paths resolve against (empty: the
	// process's own).
	Run(ctx context.Context, argv []string, source, dir string) Output
}

// Output is what one in-process run printed.
type Output struct {
	Stdout   string
	Stderr   string
	ExitCode int
	// Total is the number of bytes printed on stdout, of which Stdout may hold only the head.
	Total int64
}

// Options configure a Registry.
type Options struct {
	// Trusted returns the changes that need no confirmation: entry names ("context add") or groups
	// ("context"), the setting internal.trusted as it is now. Prepare calls it for every change, so
	// a server that runs for hours sees the list the user last set: `qkit settings reset
	// internal.trusted` withdraws the trust at once, not when the server restarts. Nil trusts nothing.
	Trusted func() []string
	// MaxOutput caps each run's output in bytes (agent.max_response_size); 0 means no cap.
	MaxOutput int64
	// AuditPath is the audit log, <state>/audit.log; empty disables auditing.
	AuditPath string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger is told about output that was cut (the assistant reads the notice); nil discards.
	Logger *slog.Logger
	// Description, when set, is what Describe returns, so a lazy registry's description needs no
	// entries: a copy of Describe's text generated with the program (cmd keeps it, and a test keeps
	// it equal to the text the entries give).
	Description string
}

// Registry holds the exposed commands and runs requests against them. It is safe for concurrent
// use: it is read-only once built.
type Registry struct {
	index func() *index
	exec  Executor
	opts  Options
}

// index is what a Registry knows of the tree: every entry, sorted by name, and each by name.
type index struct {
	entries []Entry
	byName  map[string]*Entry
}

// HelpName is the built-in entry that prints help for an exposed command.
const HelpName = "help"

// New builds a registry from the entries found in the command tree. Groups of exposed commands that
// are not in entries themselves are added, and so is the help entry.
func New(entries []Entry, exec Executor, opts Options) *Registry {
	idx := newIndex(entries)
	return newRegistry(func() *index { return idx }, exec, opts)
}

// NewLazy is New with the entries found when the registry is first used: finding them means
// building the whole command tree, which a server does not need before its first internal
// command (with Options.Description, Describe needs no entries).
func NewLazy(entries func() []Entry, exec Executor, opts Options) *Registry {
	return newRegistry(sync.OnceValue(func() *index { return newIndex(entries()) }), exec, opts)
}

func newRegistry(idx func() *index, exec Executor, opts Options) *Registry {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Registry{index: idx, exec: exec, opts: opts}
}

func newIndex(entries []Entry) *index {
	all := map[string]Entry{}
	for _, e := range entries {
		e.Name = strings.Join(e.Path, " ")
		e.Runnable = true
		all[e.Name] = e
	}
	// Make sure every ancestor of an exposed command is known, and knows its exposed children.
	for _, e := range entries {
		for i := 1; i < len(e.Path); i++ {
			parent := strings.Join(e.Path[:i], " ")
			p, ok := all[parent]
			if !ok {
				p = Entry{Path: e.Path[:i:i], Name: parent, Usage: parent + " <command>"}
			}
			child := e.Path[i]
			if !contains(p.Children, child) {
				p.Children = append(p.Children, child)
			}
			all[parent] = p
		}
	}
	if _, ok := all[HelpName]; !ok {
		all[HelpName] = Entry{
			Path: []string{HelpName}, Name: HelpName, Runnable: true, Access: Read,
			Short: "Show the help of an exposed command, or list the exposed commands",
			Usage: "help [command] [subcommand]",
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	x := &index{entries: make([]Entry, 0, len(names)), byName: map[string]*Entry{}}
	for _, n := range names {
		e := all[n]
		sort.Strings(e.Children)
		x.entries = append(x.entries, e)
	}
	for i := range x.entries {
		x.byName[x.entries[i].Name] = &x.entries[i]
	}
	return x
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// List returns every entry, groups included, sorted by name. The slice is a copy.
func (r *Registry) List() []Entry { return append([]Entry(nil), r.index().entries...) }

// Runnable returns the entries that can be run (no bare groups), sorted by name.
func (r *Registry) Runnable() []Entry {
	var out []Entry
	for _, e := range r.index().entries {
		if e.Runnable {
			out = append(out, e)
		}
	}
	return out
}

// Lookup finds an entry by name ("context add").
func (r *Registry) Lookup(name string) (Entry, bool) {
	e, ok := r.index().byName[name]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// TopLevel returns the names of the top-level entries: what `Unknown command` lists.
func (r *Registry) TopLevel() []string {
	var out []string
	for _, e := range r.index().entries {
		if len(e.Path) == 1 {
			out = append(out, e.Name)
		}
	}
	return out
}

// Trusted reports whether a change to entry name needs no confirmation by internal.trusted.
// It reads the current list (Options.Trusted).
func (r *Registry) Trusted(name string) bool {
	if r.opts.Trusted == nil {
		return false
	}
	return trustedIn(r.opts.Trusted(), name)
}

// trustedIn reports whether list (internal.trusted) names entry name or a group above it.
func trustedIn(list []string, name string) bool {
	for _, t := range list {
		t = strings.Join(strings.Fields(strings.ToLower(strings.TrimPrefix(strings.TrimSpace(t), "/"))), " ")
		if t == "" {
			continue
		}
		if t == name || strings.HasPrefix(name, t+" ") {
			return true
		}
	}
	return false
}
