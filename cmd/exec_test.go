package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/prompt"
)

// benchApp returns an App on buffers, its config not loaded (Run loads it).
func benchApp(tb testing.TB) (*app.App, *bytes.Buffer, *bytes.Buffer) {
	tb.Helper()
	streams, _, out, errOut := app.Test()
	return app.New(streams, app.VersionInfo{Version: "test"}), out, errOut
}

// testApp returns an App on buffers with QKIT_HOME in a temporary folder, its config loaded.
func testApp(t *testing.T) (*app.App, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("QKIT_HOME", home)
	for _, v := range []string{"AGENT_TIMEOUT", "AGENT_MAX_RESPONSE_SIZE", "ENABLE_ADDITIONAL_TOOLS", "QKIT_CONFIG", "QKIT_INTERNAL_TRUSTED"} {
		t.Setenv(v, "")
	}
	streams, _, out, errOut := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	return a, out, errOut
}

// mustExpose and neverExpose are what assistants must and must never reach. Every command of mustExpose must be in the tree and
// exposed; a command of neverExpose must not be exposed.
var (
	mustExpose = []string{
		"context show", "context add", "context rm", "context clear", "context profile", "context switch",
		"settings list", "settings get", "settings set", "settings reset",
		"questions list", "questions show", "mcp tools", "version", "doctor",
	}
	neverExpose = []string{
		"mcp serve", "acp serve", "ask", "exec", "exec internal", "completion",
		"questions wait", "questions answer", "questions reject", "questions ask",
	}
)

// TestRegistryWalk walks the whole command tree against the registry: the lists hold, every
// annotation is read or change, and every exposed command is reachable through `exec internal`
// (its help runs, exit 0) and through the core API the MCP tool and ACP use.
func TestRegistryWalk(t *testing.T) {
	a, _, _ := testApp(t)
	root := NewRoot(a)
	reg := internalRegistry(a, root)

	inTree := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			name := strings.Join(strings.Fields(sub.CommandPath())[1:], " ")
			inTree[name] = sub
			if v, ok := sub.Annotations[annExposure]; ok && v != exposureRead && v != exposureChange {
				t.Errorf("%s: exposure annotation %q is neither read nor change", name, v)
			}
			walk(sub)
		}
	}
	walk(root)
	for _, name := range mustExpose {
		if _, ok := inTree[name]; !ok {
			t.Errorf("%s is not in the command tree", name)
			continue
		}
		if e, ok := reg.Lookup(name); !ok || !e.Runnable {
			t.Errorf("%s is not exposed", name)
		}
	}
	for _, name := range neverExpose {
		if e, ok := reg.Lookup(name); ok && e.Runnable {
			t.Errorf("%s is exposed; it belongs to the user", name)
		}
	}

	for _, e := range reg.Runnable() {
		t.Run(e.Name, func(t *testing.T) {
			if _, ok := inTree[e.Name]; !ok && e.Name != commands.HelpName {
				t.Fatalf("registry entry %q is not a command of the tree", e.Name)
			}
			// Through the CLI adapter: `qkit exec internal <path> --flag help`.
			ca, out, errOut := testApp(t)
			argv := append(append([]string{"exec", "internal"}, e.Path...), "--flag", "help")
			if e.Name == commands.HelpName {
				argv = []string{"exec", "internal", "help"}
			}
			if code := Run(context.Background(), ca, argv); code != 0 {
				t.Fatalf("qkit %s: exit %d: %s", strings.Join(argv, " "), code, errOut)
			}
			if !strings.Contains(out.String(), "Usage:") && !strings.Contains(out.String(), "Internal commands") {
				t.Fatalf("qkit %s printed no help:\n%s", strings.Join(argv, " "), out)
			}
			// Through the core API (what the MCP tool and ACP call): `help <path>`.
			req := commands.Request{Command: commands.HelpName}
			if e.Name != commands.HelpName {
				req.Subcommand, req.Args = e.Path[0], e.Path[1:]
			}
			call, err := reg.Prepare(req)
			if err != nil {
				t.Fatal(err)
			}
			res, err := reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceMCP})
			if err != nil || res.ExitCode != 0 || res.Output == "" {
				t.Fatalf("help %s = %+v, %v", e.Name, res, err)
			}
		})
	}
}

func TestExecInternalConfirmsOnTTY(t *testing.T) {
	for _, tc := range []struct {
		answer bool
		code   int
		value  string
	}{{true, 0, "5m"}, {false, output.ExitRejected, "180s"}} {
		a, _, errOut := testApp(t)
		a.IO.StdinTTY, a.IO.StdoutTTY = true, true
		stub := &prompt.Stub{Answers: []any{tc.answer}}
		a.Prompter = stub
		code := Run(context.Background(), a, []string{"exec", "internal", "settings", "set", "agent.timeout", "5m"})
		if code != tc.code {
			t.Fatalf("answer %v: exit %d, want %d (%s)", tc.answer, code, tc.code, errOut)
		}
		if len(stub.Asked) != 1 || stub.Asked[0] != `Run "qkit settings set agent.timeout 5m"?` {
			t.Fatalf("asked %q", stub.Asked)
		}
		cfg, err := config.Load(config.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := config.AgentTimeout.Value(cfg).Raw; got != tc.value {
			t.Fatalf("answer %v: agent.timeout = %q, want %q", tc.answer, got, tc.value)
		}
		recs, err := commands.ReadAudit(filepath.Join(cfg.Paths.State, "audit.log"))
		if err != nil || len(recs) != 1 || recs[0].Confirmed != tc.answer || recs[0].ExitCode != tc.code || recs[0].Source != "cli" {
			t.Fatalf("audit = %+v, %v", recs, err)
		}
	}
}

// TestExecInternalQuestionShowsArgumentsVisibly: an argument holding ESC[2K and a carriage return
// cannot erase the question and draw a harmless one; the question and the declined message show it
// as escapes.
func TestExecInternalQuestionShowsArgumentsVisibly(t *testing.T) {
	a, _, errOut := testApp(t)
	a.IO.StdinTTY, a.IO.StdoutTTY = true, true
	stub := &prompt.Stub{Answers: []any{false}}
	a.Prompter = stub
	fake := "\x1b[2K\rRun \"qkit context show\"? [y/N] "
	if code := Run(context.Background(), a, []string{"exec", "internal", "context", "add", fake}); code != output.ExitRejected {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `Run "qkit context add '\x1b[2K\rRun \"qkit context show\"? [y/N] '"?`
	if len(stub.Asked) != 1 || stub.Asked[0] != want {
		t.Fatalf("asked %q, want %q", stub.Asked, want)
	}
	if strings.ContainsAny(errOut.String(), "\x1b\r") || !strings.Contains(errOut.String(), "declined by the user") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestExecInternalReadNeverAsks(t *testing.T) {
	a, out, _ := testApp(t)
	a.IO.StdinTTY, a.IO.StdoutTTY = true, true
	a.Prompter = &prompt.Stub{} // fails if asked
	if code := Run(context.Background(), a, []string{"exec", "internal", "settings", "get", "agent.command"}); code != 0 || out.String() != "q\n" {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// TestExecutorRecoversPanics: a command that panics is a failure with its message, not a crash.
func TestExecutorRecoversPanics(t *testing.T) {
	a, _, _ := testApp(t)
	withBoom := func(a *app.App) *cobra.Command {
		root := NewRoot(a)
		root.AddCommand(exposeRead(&cobra.Command{Use: "boom", Short: "Panic", RunE: func(*cobra.Command, []string) error { panic("kaboom") }}))
		return root
	}
	reg := commands.New(internalEntries(withBoom(a)), treeExecutor{parent: a, newRoot: withBoom}, commands.Options{})
	call, err := reg.Prepare(commands.Request{Command: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceMCP})
	if err != nil || res.ExitCode != output.ExitFailure || !strings.Contains(res.Stderr, `qkit: internal error in "boom": kaboom`) {
		t.Fatalf("panic: %+v, %v", res, err)
	}
}

// TestArgumentNeverReachesAHiddenChild: cobra routes by the words after a command's path, so an
// argument naming a child that is not exposed must be refused, not run.
func TestArgumentNeverReachesAHiddenChild(t *testing.T) {
	a, _, _ := testApp(t)
	ran := false
	tree := func(a *app.App) *cobra.Command {
		root := NewRoot(a)
		parent := exposeRead(&cobra.Command{Use: "parent", Short: "Exposed", Args: cobra.ArbitraryArgs, RunE: func(*cobra.Command, []string) error { return nil }})
		parent.AddCommand(&cobra.Command{Use: "secret", Short: "Not exposed", RunE: func(*cobra.Command, []string) error { ran = true; return nil }})
		root.AddCommand(parent)
		return root
	}
	reg := commands.New(internalEntries(tree(a)), treeExecutor{parent: a, newRoot: tree}, commands.Options{})
	for _, req := range []commands.Request{
		{Command: "parent", Args: []string{"secret"}},
		{Command: "parent", Subcommand: "secret"},
		{Command: "parent secret"},
	} {
		call, err := reg.Prepare(req)
		if err == nil {
			_, _ = reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceMCP})
			t.Errorf("%+v validated as %q", req, call.Argv)
		} else if output.Code(err) != output.ExitUsage {
			t.Errorf("%+v: exit %d: %v", req, output.Code(err), err)
		}
	}
	if ran {
		t.Fatal("the hidden child ran")
	}
	// The exposed command itself still takes arguments.
	if call, err := reg.Prepare(commands.Request{Command: "parent", Args: []string{"other"}}); err != nil || call.CommandLine != "qkit parent other" {
		t.Fatalf("parent other: %v, %v", call, err)
	}
}

// TestInternalCommandRunsInGivenDir: an in-process run for an ACP session resolves relative paths
// against the session's folder (RunOptions.Dir), not the process's.
func TestInternalCommandRunsInGivenDir(t *testing.T) {
	a, _, _ := testApp(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := internalRegistry(a, nil)
	yes := func(context.Context, *commands.Call) (bool, error) { return true, nil }
	run := func(line string) commands.Result {
		t.Helper()
		req, err := reg.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		call, err := reg.Prepare(req)
		if err != nil {
			t.Fatal(err)
		}
		res, err := reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceACP, Dir: dir, Confirm: yes})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("context add notes.md"); res.ExitCode != 0 {
		t.Fatalf("context add in the session folder: %+v", res)
	}
	if res := run("context show"); !strings.Contains(res.Output, "notes.md") || strings.Contains(res.Output, "No files") {
		t.Fatalf("context show in the session folder:\n%s", res.Output)
	}
	recs, err := commands.ReadAudit(filepath.Join(a.Config.Paths.State, "audit.log"))
	if err != nil || len(recs) != 2 || recs[0].Dir != dir || recs[0].CommandLine != "qkit context add notes.md" {
		t.Fatalf("audit %+v, %v", recs, err)
	}
}

// TestInternalCommandsInTwoFoldersAtOnce: two sessions in different folders run at the same time,
// and each resolves the same relative rule against its own folder (run with -race).
func TestInternalCommandsInTwoFoldersAtOnce(t *testing.T) {
	a, _, _ := testApp(t)
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "notes.md"), []byte(strings.Repeat("x", 400*(i+1))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg := internalRegistry(a, nil)
	add, err := reg.Prepare(commands.Request{Command: "context", Subcommand: "add", Args: []string{"notes.md"}})
	if err != nil {
		t.Fatal(err)
	}
	yes := func(context.Context, *commands.Call) (bool, error) { return true, nil }
	if res, err := reg.Run(context.Background(), add, commands.RunOptions{Source: commands.SourceACP, Dir: dirs[0], Confirm: yes}); err != nil || res.ExitCode != 0 {
		t.Fatalf("context add: %+v, %v", res, err)
	}
	show, err := reg.Prepare(commands.Request{Command: "context", Subcommand: "show", Flags: map[string]string{"json": ""}})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 10
	errs := make(chan error, 2*rounds)
	for range rounds {
		for _, d := range dirs {
			go func() {
				res, err := reg.Run(context.Background(), show, commands.RunOptions{Source: commands.SourceACP, Dir: d})
				want := `"path": "` + filepath.Join(d, "notes.md") + `"`
				if err == nil && (res.ExitCode != 0 || !strings.Contains(res.Output, want)) {
					err = fmt.Errorf("in %s: exit %d, want %s in\n%s%s", d, res.ExitCode, want, res.Output, res.Stderr)
				}
				errs <- err
			}()
		}
	}
	for range 2 * rounds {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// exampleDir is a folder holding the files the registry's examples name, made the working directory.
func exampleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"file.txt", "docs/a.md"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("# "+p+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

// exampleFailures are the examples that run but fail on a fresh home, with what they say.
var exampleFailures = map[string]string{
	"questions show":  "no question set is pending",
	"sessions show":   "session not found",
	"sessions export": "session not found",
	"sessions rm":     "session not found",
	"sessions import": "no such file",
}

// TestRegistryRunsEveryCommand runs every exposed command for real through `qkit exec internal
// --request JSON --yes --json`: the tool description's examples cover the whole registry (a command
// exposed without one fails here), and they run in order on one home, each audited as it ran.
func TestRegistryRunsEveryCommand(t *testing.T) {
	a, _, _ := testApp(t)
	exampleDir(t)
	// doctor asks the agent: the stand-in (a fresh home has no q, and doctor fails without one).
	t.Setenv("QKIT_AGENT_COMMAND", fakeqtest.Use(t))
	reg := internalRegistry(a, nil)
	covered := map[string]bool{}
	for i, ex := range reg.Examples() {
		call, err := reg.Prepare(ex.Request)
		if err != nil {
			t.Fatalf("example %q: %v", ex.Say, err)
		}
		covered[call.Entry.Name] = true
		req, err := json.Marshal(ex.Request)
		if err != nil {
			t.Fatal(err)
		}
		ca, out, errOut := benchApp(t)
		code := Run(context.Background(), ca, []string{"exec", "internal", "--request", string(req), "--yes", "--json"})
		var res execResultJSON
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%s: exit %d, no result (%v): %s%s", call.CommandLine, code, err, out, errOut)
		}
		wantCode, wantText := 0, ""
		if why, ok := exampleFailures[call.Entry.Name]; ok {
			wantCode, wantText = output.ExitNotFound, why
		}
		if code != wantCode || res.ExitCode != wantCode || !strings.Contains(res.Error, wantText) {
			t.Errorf("%s: exit %d (%d), want %d: %+v", call.CommandLine, code, res.ExitCode, wantCode, res)
		}
		if call.NeedsConfirmation != res.Confirmed {
			t.Errorf("%s: confirmed %v, needs confirmation %v", call.CommandLine, res.Confirmed, call.NeedsConfirmation)
		}
		recs, err := commands.ReadAudit(filepath.Join(a.Config.Paths.State, "audit.log"))
		if err != nil || len(recs) != i+1 {
			t.Fatalf("%s: %d audit records, want %d (%v)", call.CommandLine, len(recs), i+1, err)
		}
		if r := recs[i]; r.CommandLine != call.CommandLine || r.Source != commands.SourceCLI || r.ExitCode != wantCode || r.Declined {
			t.Errorf("%s: audit %+v", call.CommandLine, r)
		}
	}
	for _, e := range reg.Runnable() {
		if !covered[e.Name] {
			t.Errorf("%s has no example in the tool description (internal/commands/describe.go)", e.Name)
		}
	}
}

// TestProfileFlagListedWhereUsed: an entry lists the global --profile exactly when the command reads
// it. Every example runs with --profile naming a profile that does not exist: the commands that use
// the profile fail saying so, the others do not notice.
func TestProfileFlagListedWhereUsed(t *testing.T) {
	a, _, _ := testApp(t)
	exampleDir(t)
	a.ProfileFlag = "nope"
	reg := internalRegistry(a, nil)
	yes := func(context.Context, *commands.Call) (bool, error) { return true, nil }
	for name := range inheritedExposed {
		for _, user := range inheritedExposed[name] {
			if _, ok := reg.Lookup(user); !ok {
				t.Errorf("--%s is listed for %q, which is not an exposed command", name, user)
			}
		}
	}
	for _, ex := range reg.Examples() {
		call, err := reg.Prepare(ex.Request)
		if err != nil {
			t.Fatalf("example %q: %v", ex.Say, err)
		}
		res, err := reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceCLI, Confirm: yes})
		if err != nil {
			t.Fatal(err)
		}
		listed := slices.ContainsFunc(call.Entry.Flags, func(f commands.Flag) bool { return f.Name == "profile" })
		used := strings.Contains(res.Stderr, "Profile 'nope' does not exist")
		if listed != used {
			t.Errorf("%s: --profile listed %v, but the command uses it: %v (%s)", call.CommandLine, listed, used, res.Text())
		}
	}
}

// FuzzInternalPrepare validates arbitrary requests against the real command tree (the executor's
// Check parses them with each command's own flags): nothing panics, every refusal is a usage error,
// and what would run is an exposed command.
func FuzzInternalPrepare(f *testing.F) {
	for _, s := range []string{
		`{"command":"context","subcommand":"add","args":["a.md"],"flags":{"global":""}}`,
		`{"command":"settings","subcommand":"get","args":["agent.timeout"],"flags":{"json":"maybe"}}`,
		`{"command":"context","subcommand":"profile","flags":{"rename":"a"}}`,
		`{"command":"mcp","subcommand":"tools","args":["help","internal_command","x"]}`,
		`{"command":"help","subcommand":"settings","args":["set"]}`,
		`{"command":"settings","subcommand":"reset","args":["--all","-y"]}`,
	} {
		f.Add([]byte(s))
	}
	home := f.TempDir()
	f.Setenv("QKIT_HOME", home)
	streams, _, _, _ := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		f.Fatal(err)
	}
	reg := internalRegistry(a, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := commands.ParseRequest(data)
		if err != nil {
			return
		}
		call, err := reg.Prepare(req)
		if err != nil {
			if output.Code(err) != output.ExitUsage {
				t.Fatalf("refusal with exit %d: %v", output.Code(err), err)
			}
			return
		}
		if e, ok := reg.Lookup(call.Entry.Name); !ok || !e.Runnable {
			t.Fatalf("would run %q, not an exposed command", call.Argv)
		}
	})
}

// TestInternalCommandLogsTruncation: output over agent.max_response_size is cut with the notice and,
// as the agent runner does, logged on the server's stderr.
func TestInternalCommandLogsTruncation(t *testing.T) {
	a, _, errOut := testApp(t)
	a.Logger = app.NewLogger(errOut, slog.LevelInfo)
	if code := Run(context.Background(), a, []string{"settings", "set", "agent.max_response_size", "100"}); code != 0 {
		t.Fatalf("settings set: exit %d", code)
	}
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	a.Logger = app.NewLogger(errOut, slog.LevelInfo)
	reg := internalRegistry(a, nil)
	call, err := reg.Prepare(commands.Request{Command: "settings", Subcommand: "list"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.Run(context.Background(), call, commands.RunOptions{Source: commands.SourceMCP})
	if err != nil || res.Truncation == nil || !strings.Contains(res.Output, "[RESPONSE TRUNCATED: Output exceeded 100B limit.") {
		t.Fatalf("not capped: %+v, %v", res, err)
	}
	if !strings.Contains(errOut.String(), `msg="internal command output truncated" command="settings list"`) {
		t.Fatalf("not logged: %q", errOut)
	}
}

// TestExecInternalCatchesInterruptsForChangesOnly: exec internal installs the Ctrl-C handler for
// a change (it may ask, and must finish and be audited) and not for a read, which keeps the
// default, immediate exit, as the command run directly does.
func TestExecInternalCatchesInterruptsForChangesOnly(t *testing.T) {
	a, _, _ := testApp(t)
	for _, tc := range []struct {
		args    []string
		catches int
	}{
		{[]string{"settings", "get", "agent.timeout"}, 0},
		{[]string{"version"}, 0},
		{[]string{"settings", "set", "agent.timeout", "5m"}, 1},
	} {
		caught := 0
		opts := &execInternalOptions{yes: true, catchInterrupts: func() context.Context {
			caught++
			return context.Background()
		}}
		if err := runExec(context.Background(), a, opts, tc.args); err != nil {
			t.Fatalf("exec internal %v: %v", tc.args, err)
		}
		if caught != tc.catches {
			t.Errorf("exec internal %v installed the handler %d times, want %d", tc.args, caught, tc.catches)
		}
	}
}
