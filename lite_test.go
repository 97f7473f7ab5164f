package main

// The light qkit binary (build tag qkit_lite) and its helper qkit-full, built as make build builds
// them and run as processes: what the light binary's start-up runs, and what it hands over.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/qkit-cli/qkit/internal/fullbin"
)

// heavyInits are the packages whose init the light binary must not run: the display-width tables
// of tablewriter, the MCP SDK and what it brings (jsonschema-go, gob), SQLite, the NATS client.
var heavyInits = []string{"olekukonko/tablewriter", "modelcontextprotocol/go-sdk", "google/jsonschema-go", "encoding/gob", "modernc.org/", "nats-io/"}

// TestLite builds bin/qkit (light) and qkit-full beside it, with make build's flags, into a folder
// its subtests share, and runs them. It is not parallel: it writes programs and then runs them, and
// a process the test binary forks meanwhile holds the file open for writing a moment ("text file
// busy", seen beside the scripts).
func TestLite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the light and the full binary (go build); not under -short")
	}
	dir := t.TempDir()
	for _, b := range []struct{ out, tags string }{{"qkit", "qkit_lite"}, {fullbin.Name, ""}} {
		cmd := exec.Command("go", "build", "-trimpath", "-tags="+b.tags, "-ldflags=-s -w", "-o", filepath.Join(dir, b.out), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatal(&buildError{b.out, err, out})
		}
	}
	if err := readLiteSources(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*testing.T, string){
		"StartupRunsNoHeavyInit": liteStartupRunsNoHeavyInit,
		"Forwards":               liteForwards,
		"HandsOverEarly":         liteHandsOverEarly,
		"CompletesAsFull":        liteCompletesAsFull,
		"AskSessionIsListed":     liteAskSessionIsListed,
		"TableOnTerminal":        liteTableOnTerminal,
		"Installed":              liteInstalled,
	} {
		t.Run(name, func(t *testing.T) { f(t, dir) })
	}
}

type buildError struct {
	name string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "go build " + e.name + ": " + e.err.Error() + "\n" + string(e.out)
}

// readLiteSources opens the folders of the light build's own packages: go test caches a result
// until the test binary or a file the test opened changes, and the light build's own files
// (cmd/lite.go) are not in the test binary.
func readLiteSources() error {
	out, err := exec.Command("go", "list", "-tags=qkit_lite", "-deps", "-f", "{{with .Module}}{{if .Main}}{{$.Dir}}{{end}}{{end}}", ".").Output()
	if err != nil {
		return err
	}
	for _, dir := range strings.Fields(string(out)) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") {
				if _, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// liteEnv is an environment with every qkit folder inside a fresh folder, the fake agent as q on
// PATH (this test binary, which TestMain dispatches on its name) and the chat backend.
func liteEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// q is this test binary under the name q, started without the GODEBUG the tests give qkit.
	real := filepath.Join(home, "fake")
	for _, d := range []string{bin, real} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(real, "q")); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec env -u GODEBUG '" + filepath.Join(real, "q") + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "q"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "QKIT_") || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "AGENT_") ||
			name == "HOME" || name == "PATH" || name == "GODEBUG" || name == "ENABLE_ADDITIONAL_TOOLS" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "QKIT_HOME="+filepath.Join(home, ".qkit"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "QKIT_AGENT_BACKEND=chat")
}

// runLite runs the binary at path with args in env and returns stdout, stderr and the exit code.
func runLite(t *testing.T, env []string, path string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", path, args, err)
	}
	return stdout.String(), stderr.String(), code
}

var initLine = regexp.MustCompile(`(?m)^init (\S+) @`)

// liteStartupRunsNoHeavyInit: the commands people run most start without the init of any
// heavy package (read from GODEBUG=inittrace=1), and nothing was forwarded for them.
func liteStartupRunsNoHeavyInit(t *testing.T, dir string) {
	env := append(liteEnv(t), "GODEBUG=inittrace=1", fullbin.EnvPath+"="+filepath.Join(dir, "no-helper-here"))
	for _, args := range [][]string{
		{"version"},
		{"context", "show"},
		{"ask", "--dry-run", "hi"},
		{"ask", "--no-context", "hi"}, // the fake agent on the chat backend
		{"settings", "list"},          // piped: tab-separated, no table
	} {
		_, stderr, code := runLite(t, env, filepath.Join(dir, "qkit"), args...)
		if code != 0 {
			t.Errorf("qkit %s: exit %d (with no helper: was it forwarded?)\n%s", strings.Join(args, " "), code, stderr)
			continue
		}
		inits := initLine.FindAllStringSubmatch(stderr, -1)
		if len(inits) == 0 {
			t.Fatalf("qkit %s: no inittrace lines on stderr:\n%s", strings.Join(args, " "), stderr)
		}
		for _, m := range inits {
			for _, heavy := range heavyInits {
				if !strings.Contains(m[1], heavy) {
					continue
				}
				t.Errorf("qkit %s runs the init of %s (%s must not be linked into the light binary)", strings.Join(args, " "), m[1], heavy)
			}
		}
	}
}

// liteForwards: what the light binary hands to qkit-full works through it (exec, same
// command line), and a missing helper is a clear error naming where it was looked for (exit 1).
func liteForwards(t *testing.T, dir string) {
	env := liteEnv(t)
	light, full := filepath.Join(dir, "qkit"), filepath.Join(dir, fullbin.Name)

	stdout, stderr, code := runLite(t, env, light, "sessions", "list", "--json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("sessions list --json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, args := range [][]string{{"mcp", "serve", "--help"}, {"help", "acp", "serve"}, {"doctor", "--help"}} {
		got, _, code := runLite(t, env, light, args...)
		want, _, _ := runLite(t, env, full, args...)
		if code != 0 || got != want || got == "" {
			t.Errorf("qkit %s: exit %d, and the output differs from qkit-full's:\n%s\n---\n%s", strings.Join(args, " "), code, got, want)
		}
	}

	missing := append(slices.Clone(env), fullbin.EnvPath+"="+filepath.Join(dir, "gone", fullbin.Name))
	_, stderr, code = runLite(t, missing, light, "sessions", "list")
	if code != 1 || !strings.Contains(stderr, "qkit: this command needs qkit-full") || !strings.Contains(stderr, filepath.Join(dir, "gone", fullbin.Name)) {
		t.Errorf("with no helper: exit %d, stderr %q; want exit 1 and the path looked at", code, stderr)
	}
	// Without the override it is looked for beside the binary, then in ../libexec/qkit.
	alone := t.TempDir()
	lone := filepath.Join(alone, "qkit")
	data, err := os.ReadFile(light)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runLite(t, env, lone, "mcp", "serve")
	if code != 1 || !strings.Contains(stderr, filepath.Join(alone, fullbin.Name)) || !strings.Contains(stderr, filepath.Join(alone, "..", "libexec", "qkit", fullbin.Name)) {
		t.Errorf("with no helper beside it: exit %d, stderr %q", code, stderr)
	}
	// ask --schema needs the JSON Schema validator: handed over, before anything is read.
	stdout, stderr, code = runLite(t, env, light, "ask", "--dry-run", "--schema", `{"type":"object"}`, "hi")
	if code != 0 || !strings.Contains(stdout, `{"type":"object"}`) {
		t.Errorf("ask --schema --dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code = runLite(t, missing, light, "ask", "--dry-run", "--schema", `{"type":"object"}`, "hi")
	if code != 1 || !strings.Contains(stderr, "needs qkit-full") {
		t.Errorf("ask --schema with no helper: exit %d, stderr %q; want it handed over", code, stderr)
	}
	// The light build links the file store only: with questions.store nats, the commands that may
	// open the store are handed over once the configuration is read; with the file store they stay.
	// The configuration's warnings are qkit-full's to print: the light binary hands over first.
	odd := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(odd, []byte("no_such_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nats := append(slices.Clone(missing), "QKIT_QUESTIONS_STORE=nats", "QKIT_CONFIG="+odd)
	for _, args := range [][]string{{"questions", "list", "--json"}, {"ask", "--dry-run", "hi"}, {"exec", "internal", "questions", "list", "--flag", "json"}} {
		if _, stderr, code := runLite(t, nats, light, args...); code != 1 || !strings.Contains(stderr, "needs qkit-full") || strings.Contains(stderr, "no_such_key") {
			t.Errorf("qkit %s with questions.store nats: exit %d, stderr %q; want it handed over", strings.Join(args, " "), code, stderr)
		}
		if _, stderr, code := runLite(t, append(slices.Clone(missing), "QKIT_CONFIG="+odd), light, args...); code != 0 || strings.Count(stderr, "no_such_key") != 1 {
			t.Errorf("qkit %s with the file store: exit %d, stderr %q; want it run here, the configuration's warning once", strings.Join(args, " "), code, stderr)
		}
	}
	// exec internal runs a command the light tree has here (no helper needed), as words or as
	// --request JSON, and its help; it hands over what the light registry lacks: a forwarded
	// command, its help, the whole listing, a request on stdin.
	for _, args := range [][]string{
		{"exec", "internal", "context", "show", "--flag", "json"},
		{"exec", "internal", "--request", `{"command":"settings","subcommand":"get","args":["agent.timeout"]}`},
		{"exec", "internal", "help", "context", "show"},
		{"exec", "internal", "--json", "version"},
	} {
		if stdout, stderr, code := runLite(t, missing, light, args...); code != 0 || stdout == "" {
			t.Errorf("qkit %s with no helper: exit %d, stdout %q, stderr %q; want it run here", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"exec", "internal", "sessions", "list", "--flag", "json"},
		{"exec", "internal", "--request", `{"command":"doctor"}`},
		{"exec", "internal", "help", "sessions", "list"},
		{"exec", "internal", "--list", "--json"},
		{"exec", "internal", "--request", "-"},
		{"exec", "internal", "no-such-command"},
	} {
		if _, stderr, code := runLite(t, missing, light, args...); code != 1 || !strings.Contains(stderr, "needs qkit-full") {
			t.Errorf("qkit %s with no helper: exit %d, stderr %q; want it handed over", strings.Join(args, " "), code, stderr)
		}
	}
	stdout, stderr, code = runLite(t, env, light, "exec", "internal", "sessions", "list", "--flag", "json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("exec internal sessions list --flag json through qkit-full: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A light build installed as the helper would run itself forever: refused.
	loop := append(slices.Clone(env), fullbin.EnvPath+"="+light)
	_, stderr, code = runLite(t, loop, light, "sessions", "list")
	if code != 1 || !strings.Contains(stderr, "is a light build of qkit") {
		t.Errorf("a light helper: exit %d, stderr %q", code, stderr)
	}
}

// liteHandsOverEarly: `qkit mcp serve` (what MCP clients start) and the other commands forwarded
// whole are handed over from package early's init, before cobra, viper and qkit's own packages run
// theirs; a command line early cannot place (a global flag first) is handed over by cmd.Main.
// Read from GODEBUG=inittrace=1: the light binary's lines come before qkit-full's own "init runtime".
func liteHandsOverEarly(t *testing.T, dir string) {
	env := append(liteEnv(t), "GODEBUG=inittrace=1")
	light := filepath.Join(dir, "qkit")
	lightInits := func(args ...string) []string {
		t.Helper()
		_, stderr, code := runLite(t, env, light, args...)
		if code != 0 {
			t.Fatalf("qkit %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		var names []string
		for _, m := range initLine.FindAllStringSubmatch(stderr, -1) {
			if m[1] == "runtime" && slices.Contains(names, "runtime") {
				return names // qkit-full starts
			}
			names = append(names, m[1])
		}
		t.Fatalf("qkit %s: no second runtime init: was it handed over?\n%s", strings.Join(args, " "), stderr)
		return nil
	}
	// unicode: package early and fullbin import only errors, os and syscall; importing strings (which
	// imports unicode) would hold the hand-over until crypto, reflect, encoding... had run theirs.
	late := []string{"unicode", "reflect", "github.com/spf13/cobra", "github.com/spf13/viper", "github.com/qkit-cli/qkit/internal/config"}
	for _, args := range [][]string{{"mcp", "serve", "--help"}, {"sessions", "list", "--json"}, {"doctor", "--help"}} {
		for _, name := range lightInits(args...) {
			if slices.Contains(late, name) {
				t.Errorf("qkit %s: the light binary ran the init of %s before handing over", strings.Join(args, " "), name)
			}
		}
	}
	if names := lightInits("--log-level=warn", "mcp", "serve", "--help"); !slices.Contains(names, "github.com/spf13/cobra") {
		t.Errorf("qkit --log-level=warn mcp serve --help: handed over before cobra's init (%q); package early should leave it to cmd.Main", names)
	}
}

// liteCompletesAsFull: shell completion through the light binary is what qkit-full answers,
// for the commands it keeps and those it forwards alike.
func liteCompletesAsFull(t *testing.T, dir string) {
	env := liteEnv(t)
	for _, line := range [][]string{
		{""}, {"s"}, {"help", ""}, {"help", "mcp", ""}, {"--set", "x=y", "help", "sessions", ""}, {"sessions", ""}, {"mcp", "serve", "--"}, {"acp", ""}, {"doctor", "--"},
		{"context", ""}, {"settings", "get", ""}, {"ask", "--backend", ""}, {"exec", "internal", ""}, {"--log-level", ""},
	} {
		args := append([]string{"__complete"}, line...)
		got, _, _ := runLite(t, env, filepath.Join(dir, "qkit"), args...)
		want, _, _ := runLite(t, env, filepath.Join(dir, fullbin.Name), args...)
		if got != want {
			t.Errorf("qkit __complete %q differs from qkit-full's:\n%s---\n%s", line, got, want)
		}
	}
	got, _, _ := runLite(t, env, filepath.Join(dir, "qkit"), "--help")
	want, _, _ := runLite(t, env, filepath.Join(dir, fullbin.Name), "--help")
	if got != want {
		t.Errorf("qkit --help differs from qkit-full's:\n%s---\n%s", got, want)
	}
}

// liteAskSessionIsListed: a session the light binary's ask records (spooled: it links no
// SQLite) is in sessions list, which qkit-full answers after taking the spool in.
func liteAskSessionIsListed(t *testing.T, dir string) {
	env := append(liteEnv(t), "QKIT_AGENT_BACKEND=acp")
	stdout, stderr, code := runLite(t, env, filepath.Join(dir, "qkit"), "ask", "--no-context", "--json", "remember this")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s", code, stderr)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.SessionID == "" {
		t.Fatalf("ask --json: %v\n%s", err, stdout)
	}
	for range 2 { // the second list finds the spool empty and the session still there
		stdout, stderr, code = runLite(t, env, filepath.Join(dir, "qkit"), "sessions", "list", "--json")
		if code != 0 || !strings.Contains(stdout, res.SessionID) || !strings.Contains(stdout, `"origin": "ask"`) {
			t.Fatalf("sessions list: exit %d, want session %s of origin ask:\n%s\n%s", code, res.SessionID, stdout, stderr)
		}
	}
	// ask --session completes to the sessions stored for the folder: the light binary links no
	// store, and hands the completion to qkit-full.
	var list []struct {
		Cwd string `json:"cwd"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions list --json: %v\n%s", err, stdout)
	}
	complete := func(bin string) string {
		cmd := exec.Command(filepath.Join(dir, bin), "__complete", "ask", "--session", "")
		cmd.Env, cmd.Dir = env, list[0].Cwd
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s __complete ask --session: %v", bin, err)
		}
		return string(out)
	}
	got, want := complete("qkit"), complete(fullbin.Name)
	if got != want || !strings.Contains(got, res.SessionID+"\tremember this") {
		t.Errorf("qkit __complete ask --session: %q, qkit-full's %q; want session %s in both", got, want, res.SessionID)
	}
}

// liteTableOnTerminal: a list that is a table on a terminal is printed by qkit-full (the light
// binary links no tablewriter); piped, the light binary prints it.
func liteTableOnTerminal(t *testing.T, dir string) {
	env := liteEnv(t)
	onTTY := func(env []string) (string, int) {
		f, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		defer f.Close()
		cmd := exec.Command(filepath.Join(dir, "qkit"), "settings", "list")
		cmd.Env = append(slices.Clone(env), "COLUMNS=200")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = tty, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(f) // until the process closes its end (EIO)
		err = cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String() + stderr.String(), code
	}
	out, code := onTTY(env)
	if code != 0 || !strings.Contains(out, "KEY") || !strings.Contains(out, "agent.command") {
		t.Errorf("settings list on a terminal: exit %d, want qkit-full's table:\n%s", code, out)
	}
	out, code = onTTY(append(slices.Clone(env), fullbin.EnvPath+"="+filepath.Join(dir, "gone")))
	if code != 1 || !strings.Contains(out, "needs qkit-full") {
		t.Errorf("settings list on a terminal, no helper: exit %d, want it handed over:\n%s", code, out)
	}
}
