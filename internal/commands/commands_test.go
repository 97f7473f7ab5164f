package commands

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// fakeExec records what runs; Check refuses argv containing "--bad".
type fakeExec struct {
	ran    [][]string
	stdout string
	stderr string
	code   int
}

func (f *fakeExec) Check(argv []string) error {
	for _, a := range argv {
		if strings.HasPrefix(a, "--bad") {
			return fmt.Errorf("invalid argument for %s", a)
		}
	}
	return nil
}

func (f *fakeExec) Run(_ context.Context, argv []string, _, _ string) Output {
	f.ran = append(f.ran, argv)
	return Output{Stdout: f.stdout, Stderr: f.stderr, ExitCode: f.code, Total: int64(len(f.stdout))}
}

func testEntries() []Entry {
	return []Entry{
		{Path: []string{"context", "show"}, Short: "Show context", Usage: "context show", Access: Read,
			Flags: []Flag{{Name: "json", Type: "bool", NoValue: true}, {Name: "expand", Type: "bool", NoValue: true}}},
		{Path: []string{"context", "add"}, Short: "Add files", Usage: "context add <path>...", Access: Change,
			Flags: []Flag{{Name: "global", Shorthand: "g", Type: "bool", NoValue: true}, {Name: "force", Type: "bool", NoValue: true}, {Name: "profile", Type: "string"}}},
		{Path: []string{"context", "profile"}, Short: "List or manage profiles", Usage: "context profile", Access: Read,
			Flags: []Flag{{Name: "create", Type: "string", Change: true}, {Name: "delete", Type: "string", Change: true}}},
		{Path: []string{"settings", "reset"}, Short: "Reset", Usage: "settings reset", Access: Change,
			Flags: []Flag{{Name: "all", Type: "bool", NoValue: true}, {Name: "yes", Shorthand: "y", Type: "bool", NoValue: true}}},
		{Path: []string{"version"}, Short: "Version", Usage: "version", Access: Read, Flags: []Flag{{Name: "json", Type: "bool", NoValue: true}}},
	}
}

func newTestRegistry(t *testing.T, ex Executor, opts Options) *Registry {
	t.Helper()
	if opts.AuditPath == "" {
		opts.AuditPath = filepath.Join(t.TempDir(), "state", "audit.log")
	}
	return New(testEntries(), ex, opts)
}

func TestRegistryListsGroupsAndHelp(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{})
	if got, want := r.TopLevel(), []string{"context", "help", "settings", "version"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("TopLevel = %v, want %v", got, want)
	}
	g, ok := r.Lookup("context")
	if !ok || g.Runnable || !reflect.DeepEqual(g.Children, []string{"add", "profile", "show"}) {
		t.Fatalf("context group = %+v", g)
	}
}

func TestPrepareErrors(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{})
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Command: "quit"}, "Unknown command: quit. Available commands: context, help, settings, version"},
		{Request{Command: ""}, "a command is required; Available commands: context, help, settings, version"},
		{Request{Command: "context", Subcommand: "nope"}, `unknown subcommand "nope" for "context"; available: add, profile, show`},
		{Request{Command: "context"}, `"context" needs a subcommand: add, profile, show`},
		{Request{Command: "version", Subcommand: "x"}, `"version" has no subcommands; pass "x" as an argument instead`},
		{Request{Command: "context", Subcommand: "show", Flags: map[string]string{"nope": ""}}, `unknown flag "--nope" for "context show"; it accepts: --json, --expand`},
		{Request{Command: "context", Subcommand: "show", Flags: map[string]string{"json": ""}, Args: []string{"--bad"}}, "context show: invalid argument for --bad"},
		{Request{Command: "help", Subcommand: "ask"}, `no help for "ask": not an exposed command`},
		{Request{Command: "help", Subcommand: "version", Flags: map[string]string{"x": ""}}, "help takes no flags"},
	} {
		_, err := r.Prepare(tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prepare(%v) = %v, want %q", tc.req, err, tc.want)
		}
		if err != nil && output.Code(err) != output.ExitUsage {
			t.Errorf("Prepare(%v) exit code %d, want 2", tc.req, output.Code(err))
		}
	}
}

func TestPrepareArgvAndAccess(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{Trusted: trust("settings")})
	for _, tc := range []struct {
		req     Request
		argv    []string
		access  Access
		confirm bool
	}{
		{Request{Command: "/context", Subcommand: "show"}, []string{"context", "show"}, Read, false},
		{Request{Command: "context", Subcommand: "add", Args: []string{"a b.md"}, Flags: map[string]string{"g": "", "--profile": "work"}},
			[]string{"context", "add", "--global", "--profile=work", "a b.md"}, Change, true},
		// An argument that looks like a flag stays an argument.
		{Request{Command: "context", Subcommand: "add", Args: []string{"--force"}}, []string{"context", "add", "--", "--force"}, Change, true},
		// The subcommand may come as the first argument.
		{Request{Command: "context", Args: []string{"show", "x"}}, []string{"context", "show", "x"}, Read, false},
		// The whole command in the command field.
		{Request{Command: "context add", Args: []string{"a.md"}}, []string{"context", "add", "a.md"}, Change, true},
		{Request{Command: " /context  profile ", Flags: map[string]string{"create": "w"}}, []string{"context", "profile", "--create=w"}, Change, true},
		{Request{Command: "help context", Subcommand: "add"}, []string{"help", "context", "add"}, Read, false},
		// A change flag turns a read into a change; false does not.
		{Request{Command: "context", Subcommand: "profile", Flags: map[string]string{"create": "work"}}, []string{"context", "profile", "--create=work"}, Change, true},
		// --help is always a read.
		{Request{Command: "context", Subcommand: "add", Flags: map[string]string{"help": ""}}, []string{"context", "add", "--help"}, Read, false},
		{Request{Command: "context", Flags: map[string]string{"help": ""}}, []string{"context", "--help"}, Read, false},
		{Request{Command: "help", Subcommand: "context", Args: []string{"add"}}, []string{"help", "context", "add"}, Read, false},
		// Trusted by group.
		{Request{Command: "settings", Subcommand: "reset", Flags: map[string]string{"all": ""}}, []string{"settings", "reset", "--all"}, Change, false},
	} {
		call, err := r.Prepare(tc.req)
		if err != nil {
			t.Errorf("Prepare(%v): %v", tc.req, err)
			continue
		}
		if !reflect.DeepEqual(call.Argv, tc.argv) || call.Access != tc.access || call.NeedsConfirmation != tc.confirm {
			t.Errorf("Prepare(%v) = argv %q access %s confirm %v; want %q %s %v", tc.req, call.Argv, call.Access, call.NeedsConfirmation, tc.argv, tc.access, tc.confirm)
		}
	}
}

func TestRunConfirmationAndAudit(t *testing.T) {
	ex := &fakeExec{stdout: "done\n"}
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	audit := filepath.Join(t.TempDir(), "state", "audit.log")
	r := newTestRegistry(t, ex, Options{AuditPath: audit, Now: func() time.Time { return now }})
	ctx := context.Background()
	add, err := r.Prepare(Request{Command: "context", Subcommand: "add", Args: []string{"notes.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if add.CommandLine != "qkit context add notes.md" {
		t.Fatalf("command line %q", add.CommandLine)
	}

	// No way to confirm: refused, nothing runs.
	if _, err := r.Run(ctx, add, RunOptions{Source: SourceMCP}); !errors.Is(err, ErrConfirmationNeeded) {
		t.Fatalf("Run without Confirm = %v", err)
	}
	// Declined: exit 3, audited, nothing runs.
	res, err := r.Run(ctx, add, RunOptions{Source: SourceMCP, Confirm: func(context.Context, *Call) (bool, error) { return false, nil }})
	if !errors.Is(err, ErrDeclined) || res.ExitCode != output.ExitRejected || output.Code(err) != output.ExitRejected {
		t.Fatalf("declined Run = %+v, %v", res, err)
	}
	if len(ex.ran) != 0 {
		t.Fatalf("ran %v although declined", ex.ran)
	}
	// Interrupted while asking, however the door learns it (the asker reports a cancel, or the
	// context ends, even with a yes that came too late): exit 130, audited as interrupted, nothing
	// runs.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		ctx     context.Context
		confirm ConfirmFunc
	}{
		{ctx, func(context.Context, *Call) (bool, error) { return false, fmt.Errorf("asking: %w", ErrInterrupted) }},
		{cancelled, func(context.Context, *Call) (bool, error) { return true, nil }},
	} {
		res, err = r.Run(tc.ctx, add, RunOptions{Source: SourceCLI, Confirm: tc.confirm})
		if !errors.Is(err, ErrInterrupted) || res.ExitCode != output.ExitInterrupted || output.Code(err) != output.ExitInterrupted ||
			!strings.Contains(res.Stderr, `"qkit context add notes.md": interrupted before the user answered`) {
			t.Fatalf("interrupted Run = %+v, %v", res, err)
		}
	}
	if len(ex.ran) != 0 {
		t.Fatalf("ran %v although interrupted", ex.ran)
	}
	// Accepted.
	var asked string
	session := filepath.Join(t.TempDir(), "project")
	res, err = r.Run(ctx, add, RunOptions{Source: SourceACP, Dir: session, Confirm: func(_ context.Context, c *Call) (bool, error) { asked = c.CommandLine; return true, nil }})
	if err != nil || !res.Confirmed || res.Output != "done\n" || asked != "qkit context add notes.md" {
		t.Fatalf("accepted Run = %+v, %v (asked %q)", res, err, asked)
	}
	// A relative folder is refused before anything runs or is audited.
	if _, err := r.Run(ctx, add, RunOptions{Source: SourceACP, Dir: "project", Confirm: func(context.Context, *Call) (bool, error) { return true, nil }}); err == nil || !strings.Contains(err.Error(), `"project" is not an absolute path`) {
		t.Fatalf("relative Dir: %v", err)
	}
	if len(ex.ran) != 1 {
		t.Fatalf("ran %v", ex.ran)
	}
	// A read runs without asking.
	show, _ := r.Prepare(Request{Command: "context", Subcommand: "show"})
	if _, err := r.Run(ctx, show, RunOptions{Source: SourceCLI, Confirm: func(context.Context, *Call) (bool, error) {
		t.Fatal("asked for a read")
		return false, nil
	}}); err != nil {
		t.Fatal(err)
	}

	recs, err := ReadAudit(audit)
	if err != nil {
		t.Fatal(err)
	}
	want := []AuditRecord{
		{Time: now, Source: "mcp", CommandLine: "qkit context add notes.md", Access: Change, Declined: true, ExitCode: 3},
		{Time: now, Source: "cli", CommandLine: "qkit context add notes.md", Access: Change, Interrupted: true, ExitCode: 130},
		{Time: now, Source: "cli", CommandLine: "qkit context add notes.md", Access: Change, Interrupted: true, ExitCode: 130},
		{Time: now, Source: "acp", CommandLine: "qkit context add notes.md", Dir: session, Access: Change, Confirmed: true},
		{Time: now, Source: "cli", CommandLine: "qkit context show", Access: Read},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("audit =\n%+v\nwant\n%+v", recs, want)
	}
}

func TestRunAddsYesToConfirmedCommandsThatAsk(t *testing.T) {
	ex := &fakeExec{}
	r := newTestRegistry(t, ex, Options{})
	call, err := r.Prepare(Request{Command: "settings", Subcommand: "reset", Flags: map[string]string{"all": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), call, RunOptions{Confirm: func(context.Context, *Call) (bool, error) { return true, nil }}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"settings", "reset", "--all", "--yes"}; !reflect.DeepEqual(ex.ran[0], want) {
		t.Fatalf("ran %q, want %q", ex.ran[0], want)
	}
}

func TestRunCapsOutputAndKeepsFailures(t *testing.T) {
	ex := &fakeExec{stdout: strings.Repeat("line of output\n", 1000), stderr: "qkit: boom\n", code: 4}
	r := newTestRegistry(t, ex, Options{MaxOutput: 1024})
	call, _ := r.Prepare(Request{Command: "version"})
	res, err := r.Run(context.Background(), call, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || res.Stderr != "qkit: boom\n" {
		t.Fatalf("failure lost: %+v", res)
	}
	if res.Truncation == nil || !strings.HasSuffix(res.Output, "[RESPONSE TRUNCATED: Output exceeded 1.0KB limit. Original: 15000, Truncated: 1019]") {
		t.Fatalf("not capped: %q", res.Output[max(0, len(res.Output)-120):])
	}
	if !strings.HasSuffix(res.Text(), "qkit: boom\n") {
		t.Fatalf("Text() lacks the error: %q", res.Text())
	}
}

func TestBareHelpListsRegistry(t *testing.T) {
	ex := &fakeExec{}
	r := newTestRegistry(t, ex, Options{})
	call, err := r.Prepare(Request{Command: "help"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), call, RunOptions{})
	if err != nil || !strings.Contains(res.Output, "context add <path>...") || len(ex.ran) != 0 {
		t.Fatalf("help = %+v, %v, ran %v", res, err, ex.ran)
	}
}

func TestParseLine(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{})
	for line, want := range map[string]Request{
		`/context add "my notes.md" --global`:     {Command: "context", Subcommand: "add", Args: []string{"my notes.md"}, Flags: map[string]string{"global": ""}},
		`/context add --profile work a.md`:        {Command: "context", Subcommand: "add", Args: []string{"a.md"}, Flags: map[string]string{"profile": "work"}},
		`/context add -g -- --odd.md`:             {Command: "context", Subcommand: "add", Args: []string{"--odd.md"}, Flags: map[string]string{"global": ""}},
		`context profile --create=work`:           {Command: "context", Subcommand: "profile", Flags: map[string]string{"create": "work"}},
		`/version`:                                {Command: "version"},
		`/help context add`:                       {Command: "help", Subcommand: "context", Args: []string{"add"}},
		`/context show $(rm -rf ~) ; echo; 'x y'`: {Command: "context", Subcommand: "show", Args: []string{"$(rm", "~)", ";", "echo;", "x y"}, Flags: map[string]string{"rf": ""}},
	} {
		got, err := r.ParseLine(line)
		if err != nil {
			t.Errorf("ParseLine(%q): %v", line, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseLine(%q) = %#v, want %#v", line, got, want)
		}
	}
	if _, err := r.ParseLine(`/context add "open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestParseRequest(t *testing.T) {
	req, err := ParseRequest([]byte(`{"command":"context","subcommand":"add","args":["a.md"],"flags":{"global":""}}`))
	if err != nil || req.Command != "context" || req.Flags["global"] != "" || len(req.Args) != 1 {
		t.Fatalf("ParseRequest = %+v, %v", req, err)
	}
	for _, bad := range []string{``, `{}`, `{"command":"x","extra":1}`, `{"command":"x"} {}`, `[]`, `{"command":1}`} {
		if _, err := ParseRequest([]byte(bad)); err == nil || output.Code(err) != output.ExitUsage {
			t.Errorf("ParseRequest(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestTrustNeverCoversTheTrustList(t *testing.T) {
	entries := append(testEntries(), Entry{Path: []string{"settings", "set"}, Short: "Set", Usage: "settings set <key> <value>", Access: Change})
	r := New(entries, &fakeExec{}, Options{Trusted: trust("settings")})
	call, err := r.Prepare(Request{Command: "settings", Subcommand: "set", Args: []string{"internal.trusted", "context,settings"}})
	if err != nil {
		t.Fatal(err)
	}
	if call.Trusted || !call.NeedsConfirmation {
		t.Fatalf("a trusted group changed the trust list unasked: %+v", call)
	}
	// Nor the program qkit runs as the agent.
	call, _ = r.Prepare(Request{Command: "settings", Subcommand: "set", Args: []string{"agent.command", "/tmp/evil"}})
	if call.Trusted || !call.NeedsConfirmation {
		t.Fatalf("a trusted group changed agent.command unasked: %+v", call)
	}
	call, _ = r.Prepare(Request{Command: "settings", Subcommand: "set", Args: []string{"agent.timeout", "5m"}})
	if !call.Trusted || call.NeedsConfirmation {
		t.Fatalf("trusted change still asks: %+v", call)
	}
	// Nor a flag that resets them with everything else (settings reset --all).
	reset := Entry{Path: []string{"settings", "reset"}, Short: "Reset", Usage: "settings reset", Access: Change,
		Flags: []Flag{{Name: "all", Type: "bool", NoValue: true, Guarded: true}}}
	r = New(append(testEntries(), reset), &fakeExec{}, Options{Trusted: trust("settings")})
	for _, flags := range []map[string]string{{"all": ""}, {"--all": "true"}} {
		call, err = r.Prepare(Request{Command: "settings", Subcommand: "reset", Flags: flags})
		if err != nil {
			t.Fatal(err)
		}
		if call.Trusted || !call.NeedsConfirmation {
			t.Fatalf("a trusted group ran %s unasked: %+v", call.CommandLine, call)
		}
	}
	call, _ = r.Prepare(Request{Command: "settings", Subcommand: "reset", Args: []string{"agent.timeout"}, Flags: map[string]string{"all": "false"}})
	if !call.Trusted {
		t.Fatalf("reset of one setting with --all=false is not trusted: %+v", call)
	}
}

func TestTrusted(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{Trusted: trust(" Context  Add ", "/settings")})
	for name, want := range map[string]bool{"context add": true, "context rm": false, "settings reset": true, "contextual": false} {
		if got := r.Trusted(name); got != want {
			t.Errorf("Trusted(%q) = %v, want %v", name, got, want)
		}
	}
}

// trust is an Options.Trusted that always returns list.
func trust(list ...string) func() []string { return func() []string { return list } }

// TestTrustedReadForEveryCall: the trust list is read when each call is prepared, so a list the
// user changed while a server runs applies to its next call.
func TestTrustedReadForEveryCall(t *testing.T) {
	list := []string{"settings"}
	r := newTestRegistry(t, &fakeExec{}, Options{Trusted: func() []string { return list }})
	reset := Request{Command: "settings", Subcommand: "reset", Args: []string{"agent.timeout"}}
	if call, err := r.Prepare(reset); err != nil || !call.Trusted || call.NeedsConfirmation {
		t.Fatalf("trusted: %+v, %v", call, err)
	}
	list = nil
	if call, err := r.Prepare(reset); err != nil || call.Trusted || !call.NeedsConfirmation {
		t.Fatalf("after the trust was withdrawn: %+v, %v", call, err)
	}
}

func TestDescribeOnlyOffersWhatExists(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{})
	d := r.Describe()
	for _, want := range []string{"- context add (change): Add files", "Usage: context add <path>...", `"Add this file to my context" -> command="context", subcommand="add", args=["file.txt"]`, "With --create, --delete it is a change.", "  Flags: --global, --force, --profile=string\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "settings list") || strings.Contains(d, "context switch") {
		t.Errorf("description offers a command the registry lacks:\n%s", d)
	}
}

// FuzzRequest feeds arbitrary request documents through decoding and validation: nothing panics, and
// whatever validates runs a known command whose flags all come before any argument.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":"context","subcommand":"add","args":["a.md"],"flags":{"global":""}}`,
		`{"command":"context","args":["show","--json"]}`,
		`{"command":"help","subcommand":"context","args":["add"]}`,
		`{"command":"/version","flags":{"--json":"true"}}`,
		`{"command":"context","subcommand":"profile","flags":{"create":"x","help":""}}`,
		`{"command":"settings","subcommand":"reset","args":["-y"]}`,
	} {
		f.Add([]byte(s))
	}
	r := New(testEntries(), &fakeExec{}, Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseRequest(data)
		if err != nil {
			return
		}
		call, err := r.Prepare(req)
		if err != nil {
			if output.Code(err) != output.ExitUsage {
				t.Fatalf("validation error with exit %d: %v", output.Code(err), err)
			}
			return
		}
		if call.Access != Read && call.Access != Change {
			t.Fatalf("call without access: %+v", call)
		}
		if _, ok := r.Lookup(call.Argv[0]); !ok {
			t.Fatalf("runs unknown command %q", call.Argv)
		}
		afterPath := false
		for _, a := range call.Argv[len(call.Entry.Path):] {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "-") {
				if afterPath {
					t.Fatalf("flag %q after an argument in %q", a, call.Argv)
				}
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if _, ok := call.Entry.flag(name); !ok && name != "help" {
					t.Fatalf("unchecked flag %q in %q", a, call.Argv)
				}
				continue
			}
			afterPath = true
		}
		if call.Access == Change && !call.NeedsConfirmation {
			t.Fatalf("untrusted change without confirmation: %q", call.Argv)
		}
		if d := call.Display(); termtext.VisibleLine(d) != d {
			t.Fatalf("Display() %q leaves something for a terminal to act on", d)
		}
	})
}

// TestDisplayShowsEveryCharacter: an argument that would erase the question on a terminal and draw
// a harmless-looking one shows as escapes, and its quotes cannot close the real ones.
func TestDisplayShowsEveryCharacter(t *testing.T) {
	r := newTestRegistry(t, &fakeExec{}, Options{})
	for _, tc := range []struct{ arg, want string }{
		{"notes.md", `"qkit context add notes.md"`},
		{"my notes.md", `"qkit context add 'my notes.md'"`},
		{"\x1b[2K\rRun \"qkit context show\"? [y/N] ", `"qkit context add '\x1b[2K\rRun \"qkit context show\"? [y/N] '"`},
		{"a\u202eb\u009b\xff\n", `"qkit context add 'a\u202eb\u009b\xff\n'"`},
	} {
		call, err := r.Prepare(Request{Command: "context", Subcommand: "add", Args: []string{tc.arg}})
		if err != nil {
			t.Fatal(err)
		}
		d := call.Display()
		if d != tc.want || termtext.VisibleLine(d) != d {
			t.Errorf("Display() = %s, want %s", d, tc.want)
		}
		if got := DeclinedMessage(call); !strings.Contains(got, d) || termtext.VisibleLine(strings.TrimSuffix(got, "\n")) != strings.TrimSuffix(got, "\n") {
			t.Errorf("DeclinedMessage = %q", got)
		}
		// The other texts that name the command line for an assistant, which may show them to a
		// person in a terminal: the result of a run (silent, failed) and how to confirm a guarded
		// change.
		for _, res := range []Result{{CommandLine: call.CommandLine}, {CommandLine: call.CommandLine, ExitCode: 1}, {CommandLine: call.CommandLine, ExitCode: 2, Stderr: "qkit: no\n"}} {
			if got := res.Message(); !strings.HasPrefix(got, d+" ") && !strings.HasPrefix(got, d+":") {
				t.Errorf("Message() = %q, want it to start with %s", got, d)
			}
		}
		guarded, err := r.Prepare(Request{Command: "settings", Subcommand: "reset", Args: []string{TrustSetting, tc.arg}})
		if err != nil {
			t.Fatal(err)
		}
		if got := HowToConfirm(guarded); !guarded.Guarded || !strings.HasSuffix(got, "in a terminal: "+guarded.Display()) || termtext.VisibleLine(got) != got {
			t.Errorf("HowToConfirm = %q (guarded %v)", got, guarded.Guarded)
		}
	}
}

// FuzzParseLine feeds arbitrary slash-command lines (what an ACP client sends) through parsing and
// validation: nothing panics and errors are usage errors.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`/context add "my notes.md" --global`, `/context profile --create work`, `/help context`, `/x 'unterminated`, `/context add -- -x`} {
		f.Add(s)
	}
	r := New(testEntries(), &fakeExec{}, Options{})
	f.Fuzz(func(t *testing.T, line string) {
		req, err := r.ParseLine(line)
		if err != nil {
			if output.Code(err) != output.ExitUsage {
				t.Fatalf("parse error with exit %d: %v", output.Code(err), err)
			}
			return
		}
		if _, err := r.Prepare(req); err != nil && output.Code(err) != output.ExitUsage {
			t.Fatalf("validation error with exit %d: %v", output.Code(err), err)
		}
	})
}

// TestAuditConcurrentAppends: lines from concurrent runs never interleave or go missing.
func TestAuditConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.log")
	const n = 40
	done := make(chan error, n)
	for i := range n {
		go func() {
			done <- AppendAudit(path, AuditRecord{Source: "mcp", CommandLine: fmt.Sprintf("qkit context add %d-%s.md", i, strings.Repeat("x", 4000)), Access: Change})
		}()
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadAudit(path)
	if err != nil || len(recs) != n {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

// TestResultMessage: the one text every front end gives an assistant for a run.
func TestResultMessage(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{CommandLine: "qkit context add x"}, "\"qkit context add x\": done.\n"},
		{Result{CommandLine: "qkit context show", Output: "rules"}, "rules\n"},
		{Result{CommandLine: "qkit settings get nope", Stderr: "qkit: unknown setting\n", ExitCode: 2}, "\"qkit settings get nope\" exited 2:\nqkit: unknown setting\n"},
		{Result{CommandLine: "qkit questions show", ExitCode: 4}, "\"qkit questions show\" exited 4.\n"},
	} {
		if got := c.res.Message(); got != c.want {
			t.Errorf("Message() = %q, want %q", got, c.want)
		}
	}
	if got := DeclinedMessage(&Call{CommandLine: "qkit context add x"}); got != "The user declined to run \"qkit context add x\"; it did not run.\n" {
		t.Errorf("DeclinedMessage = %q", got)
	}
}

// TestNewLazyFindsEntriesOnce: a lazy registry finds its entries at its first use, once
// however many goroutines use it at the same time, and is then the registry New builds.
func TestNewLazyFindsEntriesOnce(t *testing.T) {
	var calls atomic.Int32
	r := NewLazy(func() []Entry { calls.Add(1); return testEntries() }, &fakeExec{}, Options{})
	if n := calls.Load(); n != 0 {
		t.Fatalf("entries found %d times before any use", n)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _, _ = r.Lookup("version"); _ = r.Describe() })
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("entries found %d times, want once", n)
	}
	if got, want := r.List(), New(testEntries(), &fakeExec{}, Options{}).List(); !reflect.DeepEqual(got, want) {
		t.Errorf("lazy List = %+v\nwant %+v", got, want)
	}
}

// TestDescribeFromOptionsNeedsNoEntries: a lazy registry given its description answers Describe
// without finding its entries.
func TestDescribeFromOptionsNeedsNoEntries(t *testing.T) {
	var calls atomic.Int32
	r := NewLazy(func() []Entry { calls.Add(1); return testEntries() }, &fakeExec{}, Options{Description: "generated"})
	if got := r.Describe(); got != "generated" || calls.Load() != 0 {
		t.Errorf("Describe = %q after finding the entries %d times; want the given text, none", got, calls.Load())
	}
}
