package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// internalFixture is a server with the real registry over qkit's command tree, on a private
// QKIT_HOME that the in-process commands also see.
type internalFixture struct {
	app  *app.App
	deps *mcpserver.Deps
	home string
}

func newInternalFixture(t *testing.T, env map[string]string) *internalFixture {
	t.Helper()
	home := filepath.Join(t.TempDir(), "qkit")
	// The internal commands load their configuration from the process environment.
	t.Setenv("QKIT_HOME", home)
	for _, v := range []string{"AGENT_TIMEOUT", "AGENT_MAX_RESPONSE_SIZE", "ENABLE_ADDITIONAL_TOOLS", "QKIT_CONFIG", "QKIT_INTERNAL_TRUSTED"} {
		t.Setenv(v, "")
	}
	vars := map[string]string{"QKIT_HOME": home}
	for k, v := range env {
		vars[k] = v
		t.Setenv(k, v)
	}
	a := mcptest.NewApp(t, vars)
	return &internalFixture{app: a, home: home, deps: &mcpserver.Deps{App: a, Commands: cmd.InternalRegistry(a)}}
}

// connect starts the server and a Go SDK client on protocol version (empty: the newest), with an
// elicitation handler when answer is not nil.
func (f *internalFixture) connect(t *testing.T, version string, answer func(*mcp.ElicitRequest) *mcp.ElicitResult) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientOptions
	if answer != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return answer(r), nil
		}}
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(f.deps).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "internal-test", Version: "test"}, opts).
		Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return cs
}

func callInternal(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "internal_command", Arguments: args})
	if err != nil {
		t.Fatalf("internal_command %v: protocol error %v", args, err)
	}
	return res, mcptest.Text(res)
}

func (f *internalFixture) setting(t *testing.T, key string) string {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) {
		if k == "QKIT_HOME" {
			return f.home, true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := cfg.Lookup(key)
	if !ok {
		t.Fatalf("no setting %q", key)
	}
	return v.Raw
}

func (f *internalFixture) audit(t *testing.T) []commands.AuditRecord {
	t.Helper()
	recs, err := commands.ReadAudit(filepath.Join(f.home, "state", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

var setTimeout = map[string]any{"command": "settings", "subcommand": "set", "args": []string{"agent.timeout", "5m"}}

// TestInternalCommandWalksRegistry: every exposed command is reachable through the tool.
func TestInternalCommandWalksRegistry(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	for _, e := range f.deps.Commands.Runnable() {
		args := map[string]any{"command": commands.HelpName}
		if e.Name != commands.HelpName {
			args = map[string]any{"command": e.Path[0], "args": e.Path[1:], "flags": map[string]string{"help": ""}}
		}
		res, text := callInternal(t, cs, args)
		if res.IsError || (!strings.Contains(text, "Usage:") && !strings.Contains(text, "Internal commands")) {
			t.Errorf("%s: %v %q", e.Name, res.IsError, text)
		}
	}
}

// TestInternalCommandRunsEveryCommand runs every exposed command for real through the tool: the
// description's examples cover the registry (cmd's TestRegistryRunsEveryCommand checks that), each
// runs in order, a change after the user accepts, and each is audited as run by "mcp".
func TestInternalCommandRunsEveryCommand(t *testing.T) {
	f := newInternalFixture(t, nil)
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
	asked := 0
	cs := f.connect(t, "", func(*mcp.ElicitRequest) *mcp.ElicitResult {
		asked++
		return &mcp.ElicitResult{Action: "accept"}
	})
	reg := f.deps.Commands
	covered := map[string]bool{}
	changes := 0
	for i, ex := range reg.Examples() {
		call, err := reg.Prepare(ex.Request)
		if err != nil {
			t.Fatalf("example %q: %v", ex.Say, err)
		}
		covered[call.Entry.Name] = true
		if call.NeedsConfirmation {
			changes++
		}
		args := map[string]any{"command": ex.Request.Command}
		if ex.Request.Subcommand != "" {
			args["subcommand"] = ex.Request.Subcommand
		}
		if len(ex.Request.Args) > 0 {
			args["args"] = ex.Request.Args
		}
		if len(ex.Request.Flags) > 0 {
			args["flags"] = ex.Request.Flags
		}
		res, text := callInternal(t, cs, args)
		wantCode, want := 0, ""
		if call.Entry.Name == "questions show" { // a fresh home has no question set
			wantCode, want = 4, "exited 4:\nqkit: no question set is pending"
		}
		switch call.Entry.Name { // a fresh home has no session 3f2a, and the folder no fix-login.json
		case "sessions show", "sessions export", "sessions rm":
			wantCode, want = 4, "exited 4:\nqkit: session 3f2a: session not found"
		case "sessions import":
			wantCode, want = 4, "no such file"
		}
		if call.Entry.Name == "doctor" { // an earlier example set agent.command to kiro-cli, not on PATH here
			wantCode, want = 1, "fail  agent"
		}
		if res.IsError != (wantCode != 0) || !strings.Contains(text, want) {
			t.Errorf("%s: error %v %q", call.CommandLine, res.IsError, text)
		}
		recs := f.audit(t)
		if len(recs) != i+1 {
			t.Fatalf("%s: %d audit records, want %d", call.CommandLine, len(recs), i+1)
		}
		if r := recs[i]; r.CommandLine != call.CommandLine || r.Source != commands.SourceMCP || r.ExitCode != wantCode || r.Confirmed != call.NeedsConfirmation {
			t.Errorf("%s: audit %+v", call.CommandLine, r)
		}
	}
	if asked != changes || changes == 0 {
		t.Errorf("the user was asked %d times for %d changes", asked, changes)
	}
	for _, e := range reg.Runnable() {
		if !covered[e.Name] {
			t.Errorf("%s is not reached by any example", e.Name)
		}
	}
}

func TestInternalCommandDescriptionFromRegistry(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name != "internal_command" {
			continue
		}
		for _, want := range []string{"- settings set (change): Change a setting in config.yaml", "Usage: settings get <key>", `"Use kiro-cli instead of q" -> command="settings"`} {
			if !strings.Contains(tool.Description, want) {
				t.Errorf("description lacks %q:\n%s", want, tool.Description)
			}
		}
		return
	}
	t.Fatal("internal_command is not listed")
}

func TestInternalCommandReadRunsAtOnce(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil) // no elicitation: a read needs none
	res, text := callInternal(t, cs, map[string]any{"command": "settings", "subcommand": "get", "args": []string{"agent.command"}})
	if res.IsError || text != "q\n" {
		t.Fatalf("got %v %q", res.IsError, text)
	}
	recs := f.audit(t)
	if len(recs) != 1 || recs[0].Source != "mcp" || recs[0].CommandLine != "qkit settings get agent.command" || recs[0].Access != commands.Read {
		t.Fatalf("audit %+v", recs)
	}
}

func TestInternalCommandRefusesBeforeRunning(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "quit"}, "Unknown command: quit. Available commands: "},
		{map[string]any{"command": "mcp", "subcommand": "serve"}, `unknown subcommand "serve" for "mcp"`},
		{map[string]any{"command": "settings", "subcommand": "get", "flags": map[string]string{"config": "/x"}}, `unknown flag "--config"`},
		{map[string]any{"command": "settings", "subcommand": "get", "args": []string{"a", "b"}}, "accepts 1 arg(s), received 2"},
	} {
		res, text := callInternal(t, cs, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%v: %v %q, want an error with %q", tc.args, res.IsError, text, tc.want)
		}
	}
	if _, err := commands.ReadAudit(filepath.Join(f.home, "state", "audit.log")); err == nil {
		t.Error("a refused request was run (audit log exists)")
	}
}

func TestInternalCommandFailureKeepsErrorAndCode(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	res, text := callInternal(t, cs, map[string]any{"command": "settings", "subcommand": "get", "args": []string{"nope"}})
	if !res.IsError || !strings.Contains(text, `"qkit settings get nope" exited 2`) || !strings.Contains(text, `unknown setting "nope"`) {
		t.Fatalf("got %v %q", res.IsError, text)
	}
}

// TestInternalCommandTextsShowArgumentsVisibly: the tool's texts that name the command line (a
// failed run's result, how to confirm a guarded change) show an argument's escape sequence and
// bidirectional override as escapes, as Call.Display does: the assistant may show them to a person
// in a terminal.
func TestInternalCommandTextsShowArgumentsVisibly(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	const hostile = "nope\x1b[2K\r\u202e"
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "settings", "subcommand": "get", "args": []string{hostile}},
			`"qkit settings get nope\x1b\\[2K\r\u202e" exited 2:`},
		{map[string]any{"command": "settings", "subcommand": "set", "args": []string{"agent.command", hostile}},
			`in a terminal: "qkit settings set agent.command nope\x1b`},
	} {
		res, text := callInternal(t, cs, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) || strings.ContainsAny(text, "\x1b\r\u202e") {
			t.Errorf("%v: %v %q, want an error with %s and no raw control or override", tc.args, res.IsError, text, tc.want)
		}
	}
}

// TestInternalCommandNoElicitation: a client without elicitation gets a tool error naming the
// command; nothing changes; internal.trusted lets it run.
func TestInternalCommandNoElicitation(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	res, text := callInternal(t, cs, setTimeout)
	if !res.IsError || !strings.Contains(text, `"qkit settings set agent.timeout 5m" changes state and needs the user's confirmation`) {
		t.Fatalf("got %v %q", res.IsError, text)
	}
	if got := f.setting(t, "agent.timeout"); got != "180s" {
		t.Fatalf("agent.timeout = %q although not confirmed", got)
	}

	trusted := newInternalFixture(t, map[string]string{"QKIT_INTERNAL_TRUSTED": "settings set"})
	cs = trusted.connect(t, "", nil)
	if res, text := callInternal(t, cs, setTimeout); res.IsError {
		t.Fatalf("trusted: %q", text)
	}
	if got := trusted.setting(t, "agent.timeout"); got != "5m" {
		t.Fatalf("trusted: agent.timeout = %q", got)
	}
	recs := trusted.audit(t)
	if len(recs) != 1 || !recs[0].Trusted || recs[0].Confirmed {
		t.Fatalf("audit %+v", recs)
	}
}

// TestInternalCommandTrustWithdrawn: a server reads internal.trusted for each call, so resetting it
// while the server runs withdraws the trust from the next call: that change needs confirmation
// again, which this client cannot give.
func TestInternalCommandTrustWithdrawn(t *testing.T) {
	home := filepath.Join(t.TempDir(), "qkit")
	file := filepath.Join(home, "config", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("internal:\n  trusted: [settings set]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newInternalFixture(t, map[string]string{"QKIT_HOME": home})
	f.home = home
	cs := f.connect(t, "", nil)
	if res, text := callInternal(t, cs, setTimeout); res.IsError {
		t.Fatalf("trusted: %q", text)
	}
	// The user withdraws the trust while the server runs.
	streams, _, _, errOut := app.Test()
	if code := cmd.Run(t.Context(), app.New(streams, app.VersionInfo{}), []string{"settings", "reset", "internal.trusted"}); code != 0 {
		t.Fatalf("settings reset internal.trusted: exit %d: %s", code, errOut)
	}
	res, text := callInternal(t, cs, map[string]any{"command": "settings", "subcommand": "set", "args": []string{"agent.timeout", "7m"}})
	if !res.IsError || !strings.Contains(text, "needs the user's confirmation") {
		t.Fatalf("after the trust was withdrawn: %v %q", res.IsError, text)
	}
	if got := f.setting(t, "agent.timeout"); got != "5m" {
		t.Fatalf("agent.timeout = %q, want 5m", got)
	}
	if recs := f.audit(t); len(recs) != 1 || !recs[0].Trusted {
		t.Fatalf("audit %+v", recs)
	}
}

// TestInternalCommandElicitation: accept runs the change, decline refuses it (audited as declined)
// and cancel too (audited as interrupted, as the CLI's Ctrl-C and ACP's session/cancel are), on the
// newest protocol (multi-round-trip answered by the client) and on 2025-11-25 (the SDK asks with
// elicitation/create and calls the tool again).
func TestInternalCommandElicitation(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, action := range []string{"accept", "decline", "cancel"} {
			t.Run(version+"/"+action, func(t *testing.T) {
				f := newInternalFixture(t, nil)
				var asked []string
				cs := f.connect(t, version, func(r *mcp.ElicitRequest) *mcp.ElicitResult {
					asked = append(asked, r.Params.Message)
					return &mcp.ElicitResult{Action: action}
				})
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %q, want %q", got, version)
				}
				res, text := callInternal(t, cs, setTimeout)
				if len(asked) != 1 || !strings.Contains(asked[0], `"qkit settings set agent.timeout 5m"`) {
					t.Fatalf("asked %q", asked)
				}
				want, value := "", "180s"
				switch action {
				case "accept":
					value = "5m"
				case "decline":
					want = `The user declined to run "qkit settings set agent.timeout 5m"`
				case "cancel":
					want = `The question whether to run "qkit settings set agent.timeout 5m" was cancelled before the user answered; it did not run.`
				}
				if res.IsError != (want != "") || !strings.Contains(text, want) {
					t.Fatalf("got %v %q", res.IsError, text)
				}
				if got := f.setting(t, "agent.timeout"); got != value {
					t.Fatalf("agent.timeout = %q, want %q", got, value)
				}
				recs := f.audit(t)
				if len(recs) != 1 || recs[0].Source != "mcp" || recs[0].Confirmed != (action == "accept") ||
					recs[0].Declined != (action == "decline") || recs[0].Interrupted != (action == "cancel") {
					t.Fatalf("audit %+v", recs)
				}
			})
		}
	}
}

// TestInternalCommandForgedAnswer: an answer that was not asked for this exact command does not
// confirm it.
func TestInternalCommandForgedAnswer(t *testing.T) {
	f := newInternalFixture(t, nil)
	cs := f.connect(t, "", nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
		Name: "internal_command", Arguments: setTimeout,
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}},
		RequestState:   "forged",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("forged confirmation ran the command: %q", mcptest.Text(res))
	}
	if got := f.setting(t, "agent.timeout"); got != "180s" {
		t.Fatalf("agent.timeout = %q", got)
	}
}

// TestInternalCommandConcurrentCalls: calls run concurrently on their own fresh trees; every change
// lands and every call is audited (run with -race).
func TestInternalCommandConcurrentCalls(t *testing.T) {
	f := newInternalFixture(t, map[string]string{"QKIT_INTERNAL_TRUSTED": "context add"})
	dir := t.TempDir()
	cs := f.connect(t, "", nil)
	const n = 8
	errs := make(chan string, 2*n)
	call := func(args map[string]any) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "internal_command", Arguments: args})
		switch {
		case err != nil:
			errs <- err.Error()
		case res.IsError:
			errs <- mcptest.Text(res)
		default:
			errs <- ""
		}
	}
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("f%d.md", i))
		go call(map[string]any{"command": "context", "subcommand": "add", "args": []string{path}, "flags": map[string]string{"force": ""}})
		go call(map[string]any{"command": "context", "subcommand": "show", "flags": map[string]string{"json": ""}})
	}
	for range 2 * n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	_, text := callInternal(t, cs, map[string]any{"command": "context", "subcommand": "show", "flags": map[string]string{"json": ""}})
	for i := range n {
		if !strings.Contains(text, fmt.Sprintf("f%d.md", i)) {
			t.Errorf("f%d.md lost:\n%s", i, text)
		}
	}
	if recs := f.audit(t); len(recs) != 2*n+1 {
		t.Errorf("%d audit records, want %d", len(recs), 2*n+1)
	}
}
