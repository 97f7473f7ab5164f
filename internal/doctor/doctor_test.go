package doctor

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
)

func TestMain(m *testing.M) { fakeqtest.Main(m) }

// env is a doctor run's world: QKIT_HOME in a temporary folder, settings from vars and sets.
type env struct {
	t    *testing.T
	home string
	vars map[string]string
	sets map[string]string
	dir  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	return &env{t: t, home: home, vars: map[string]string{"QKIT_HOME": home, "HOME": home}, sets: map[string]string{}, dir: t.TempDir()}
}

// agent makes the fake the agent command, as flavour, with the fake's knobs in kv.
func (e *env) agent(flavour string, kv ...string) *env {
	e.sets["agent.command"] = fakeqtest.Flavour(e.t, flavour, kv...)
	return e
}

func (e *env) config() *config.Config {
	e.t.Helper()
	cfg, err := config.Load(config.LoadOptions{Overrides: e.sets, LookupEnv: func(k string) (string, bool) {
		v, ok := e.vars[k]
		return v, ok
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

func (e *env) run() map[string]Check {
	e.t.Helper()
	return e.runWith(Options{})
}

func (e *env) runWith(o Options) map[string]Check {
	e.t.Helper()
	if o.Config == nil {
		o.Config = e.config()
	}
	o.Dir, o.Version = e.dir, "test"
	rep := Run(e.t.Context(), o)
	got := map[string]Check{}
	var names []string
	worst := OK
	for _, c := range rep.Checks {
		got[c.Name] = c
		names = append(names, c.Name)
		if rank(c.Status) > rank(worst) {
			worst = c.Status
		}
		if (c.Status == OK) != (c.Fix == "") {
			e.t.Errorf("%s: status %s with fix %q", c.Name, c.Status, c.Fix)
		}
		if strings.ContainsAny(c.Detail+c.Fix, "\n\x1b") {
			e.t.Errorf("%s: not one clean line: %q %q", c.Name, c.Detail, c.Fix)
		}
	}
	if !slices.Equal(names, Names) || rep.Status != worst {
		e.t.Fatalf("report: %v, status %s (worst %s)", names, rep.Status, worst)
	}
	return got
}

func want(t *testing.T, c Check, status Status, detail, fix string) {
	t.Helper()
	if c.Status != status || !strings.Contains(c.Detail, detail) || c.Fix != fix {
		t.Errorf("%s: %s %q fix %q; want %s, detail with %q, fix %q", c.Name, c.Status, c.Detail, c.Fix, status, detail, fix)
	}
}

// Everything in order, with kiro-cli: every check ok, and nothing written (the backend cache
// least of all).
func TestAllOK(t *testing.T) {
	e := newEnv(t).agent("kiro")
	got := e.run()
	for _, name := range Names {
		if got[name].Status != OK {
			t.Errorf("%s: %+v", name, got[name])
		}
	}
	cmd := e.sets["agent.command"]
	want(t, got[CheckAgent], OK, "found at "+cmd, "")
	want(t, got[CheckVersion], OK, "kiro-cli 2.21.2: Kiro CLI", "")
	want(t, got[CheckLogin], OK, "logged in with Builder ID", "")
	want(t, got[CheckBackend], OK, "acp (auto: not learned yet; the first run probes", "")
	want(t, got[CheckACP], OK, "Kiro CLI Agent 2.0.1 answers initialize (protocol 1): session/load, images, MCP over HTTP", "")
	want(t, got[CheckModels], OK, "6 models from ", "")
	want(t, got[CheckConfig], OK, "no config file", "")
	want(t, got[CheckContext], OK, "profile default: 0 files (0 rules)", "")
	want(t, got[CheckQuestions], OK, "file store: "+filepath.Join(e.home, "state", "questions"), "")
	want(t, got[CheckPage], OK, "none running", "")
	want(t, got[CheckState], OK, "does not exist yet; qkit creates it in "+e.home, "")
	if entries, _ := os.ReadDir(e.home); len(entries) != 0 {
		t.Errorf("doctor wrote %v", entries)
	}
}

func TestAgentMissing(t *testing.T) {
	e := newEnv(t)
	e.sets["agent.command"] = "qkit-no-such-agent"
	got := e.run()
	fix := "qkit --set agent.command=/path/to/kiro-cli doctor"
	want(t, got[CheckAgent], Fail, `agent.command "qkit-no-such-agent" (from --set) not found`, fix)
	for _, name := range []string{CheckVersion, CheckLogin, CheckBackend, CheckACP, CheckModels} {
		want(t, got[name], Warn, "not checked: the agent command was not found", fix)
	}
	e.vars["QKIT_AGENT_COMMAND"], e.sets = "qkit-no-such-agent", map[string]string{}
	want(t, e.run()[CheckAgent], Fail, "(from QKIT_AGENT_COMMAND) not found", "export QKIT_AGENT_COMMAND=/path/to/kiro-cli")
}

func TestLoggedOut(t *testing.T) {
	e := newEnv(t).agent("kiro", "FAKEQ_LOGGED_OUT=1")
	cmd := e.sets["agent.command"]
	got := e.run()
	want(t, got[CheckLogin], Fail, "not logged in ("+filepath.Base(cmd)+" whoami: Not logged in)", cmd+" login")
	want(t, got[CheckACP], Warn, "answers initialize, but is not logged in", cmd+" login")
	want(t, got[CheckBackend], OK, "acp (auto: not learned yet", "")

	// A headless credential is a login.
	t.Setenv("KIRO_API_KEY", "ci")
	want(t, e.run()[CheckLogin], OK, "logged in with API key from KIRO_API_KEY", "")
}

func TestQFlavour(t *testing.T) {
	e := newEnv(t).agent("q")
	got := e.run()
	want(t, got[CheckVersion], OK, "q 1.19.7: the Amazon Q Developer CLI 1.x (chat only", "")
	want(t, got[CheckACP], OK, "acp does not speak the Agent Client Protocol", "")
	want(t, got[CheckBackend], OK, "chat (auto: not learned yet; the first run probes", "")
	want(t, got[CheckModels], OK, "cannot list its models", "")

	// agent.backend=acp with an agent that has no acp: both fail, and auto is the fix.
	e.sets["agent.backend"] = "acp"
	got = e.run()
	want(t, got[CheckBackend], Fail, "which does not answer initialize", "qkit --set agent.backend=auto doctor")
	want(t, got[CheckACP], Fail, "acp does not speak the Agent Client Protocol", "qkit --set agent.backend=auto doctor")

	// agent.backend=chat: the agent is not asked.
	e.sets["agent.backend"] = "chat"
	got = e.run()
	want(t, got[CheckBackend], OK, "chat (agent.backend=chat, from --set)", "")
	want(t, got[CheckACP], OK, "not asked", "")
}

// What auto learned is checked against what the agent answers now: a stale learning fails, with
// the command that learns again.
func TestLearnedBackend(t *testing.T) {
	e := newEnv(t).agent("kiro")
	cfg := e.config()
	cmd := config.AgentCommand.Get(cfg)
	cache := acpclient.BackendCacheFile(cfg.Paths.State)
	if _, err := acpclient.ChooseBackend(t.Context(), acpclient.BackendAuto, cmd, cache, false, nil); err != nil {
		t.Fatal(err)
	}
	var before []byte
	want(t, e.run()[CheckBackend], OK, "acp (auto: learned about this ", "")
	t.Setenv("FAKEQ_ACP_BAD", "exit")
	want(t, e.run()[CheckBackend], Fail, "but "+filepath.Base(cmd)+" acp now says chat fits", refreshFix)
	// Learned chat, and it speaks ACP now: runs still work (on chat), so it is only a warning.
	if _, err := acpclient.ChooseBackend(t.Context(), acpclient.BackendAuto, cmd, cache, true, nil); err != nil {
		t.Fatal(err)
	}
	before, _ = os.ReadFile(cache)
	t.Setenv("FAKEQ_ACP_BAD", "")
	want(t, e.run()[CheckBackend], Warn, "chat (auto: learned about this ", refreshFix)
	if after, _ := os.ReadFile(cache); string(after) != string(before) {
		t.Error("doctor changed the backend cache")
	}
}

// Every probe is bounded: an agent that never answers is reported, not waited for.
func TestHangingAgent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script agent")
	}
	e := newEnv(t)
	script := filepath.Join(t.TempDir(), "kiro-cli")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.sets["agent.command"] = script
	got := e.runWith(Options{Timeout: 300 * time.Millisecond})
	want(t, got[CheckVersion], Warn, "kiro-cli --version did not answer within 300ms", script+" --version")
	want(t, got[CheckLogin], Warn, "kiro-cli whoami did not answer within 300ms", script+" login")
	want(t, got[CheckACP], Warn, "kiro-cli acp did not answer within 300ms", "qkit settings set agent.backend chat")
	want(t, got[CheckModels], Warn, "kiro-cli chat --list-models did not answer within 300ms", "qkit ask --list-models")
	want(t, got[CheckBackend], OK, "auto: not learned yet", "")
}

func TestModels(t *testing.T) {
	e := newEnv(t).agent("kiro")
	e.sets["agent.model"] = "claude-opus-4.6"
	want(t, e.run()[CheckModels], OK, "agent.model claude-opus-4.6 is one of them", "")
	e.sets["agent.model"] = "gpt-9"
	want(t, e.run()[CheckModels], Fail, `agent.model "gpt-9" is not one of the 6 models from `, "qkit --set agent.model=auto doctor")
	e.sets["agent.models"] = "a,b"
	want(t, e.run()[CheckModels], Fail, `agent.model "gpt-9" is not one of the 2 models from agent.models: a, b`, "qkit --set agent.model=a doctor")
}

func TestConfig(t *testing.T) {
	e := newEnv(t).agent("kiro")
	file := filepath.Join(e.home, "config", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("agent:\n  timeout: forever\n  timout: 3m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, e.run()[CheckConfig], Fail, `bad values (the commands other than settings and doctor refuse to run): `+file+`: invalid value "forever" for agent.timeout`, "qkit settings reset agent.timeout")

	e.vars["QKIT_AGENT_TIMEOUT"] = "soon"
	want(t, e.run()[CheckConfig], Fail, `QKIT_AGENT_TIMEOUT: invalid value "soon"`, "unset QKIT_AGENT_TIMEOUT")
	delete(e.vars, "QKIT_AGENT_TIMEOUT")

	if err := os.WriteFile(file, []byte("agent:\n  timout: 3m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, e.run()[CheckConfig], Warn, "not settings, ignored: agent.timout (did you mean agent.timeout?)", "${EDITOR:-vi} "+file)

	if err := os.WriteFile(file, []byte("agent:\n  timeout: 3m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, e.run()[CheckConfig], OK, file+" parses; 1 setting set there, 1 setting from --set", "")

	// A file that does not parse: the caller loaded the configuration without it.
	if err := os.WriteFile(file, []byte("agent: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := config.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := e.vars[k]; return v, ok }})
	cfg, err := config.Load(config.LoadOptions{SkipFile: true, Overrides: e.sets, LookupEnv: func(k string) (string, bool) { v, ok := e.vars[k]; return v, ok }})
	if loadErr == nil || err != nil || cfg.File != file {
		t.Fatalf("load: %v, skipping the file: %v %s", loadErr, err, cfg.File)
	}
	got := e.runWith(Options{Config: cfg, ConfigErr: loadErr})
	want(t, got[CheckConfig], Fail, loadErr.Error()+"; qkit commands refuse to run until it is fixed", "${EDITOR:-vi} "+file)
	want(t, got[CheckAgent], OK, "found at", "") // the rest is still checked
}

func TestContext(t *testing.T) {
	e := newEnv(t).agent("kiro")
	ctxDir := filepath.Join(e.home, "config", "context")
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(e.dir, "small.md"), "four")
	write(filepath.Join(e.dir, "big.md"), strings.Repeat("x", 400))
	write(filepath.Join(ctxDir, "global.json"), `{"paths": ["*.md"]}`)
	// The estimate counts each file's [path] header, so it depends on e.dir's length: the store
	// says what it is, and doctor must say the same.
	rep, err := contextfiles.NewStore(filepath.Join(e.home, "config")).Collect("default", e.dir, 0, contextfiles.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := strconv.FormatInt(rep.NeededTokens(), 10)
	want(t, e.run()[CheckContext], OK, "profile default: 2 files (1 rule) from "+e.dir+", about "+all+" of 150000 tokens", "")

	e.sets["context.max_tokens"] = "50"
	want(t, e.run()[CheckContext], Warn, "over the budget, 1 file is dropped (the largest "+filepath.Join(e.dir, "big.md")+")", "qkit --set context.max_tokens="+all+" doctor")
	delete(e.sets, "context.max_tokens")

	write(filepath.Join(ctxDir, "active"), "work\n")
	want(t, e.run()[CheckContext], Fail, "Profile 'work' does not exist", "qkit context switch default")
	write(filepath.Join(ctxDir, "active"), "default\n")

	write(filepath.Join(ctxDir, "global.json"), `["*.md"]`)
	want(t, e.run()[CheckContext], Fail, "corrupt context config", "${EDITOR:-vi} "+filepath.Join(ctxDir, "global.json"))
	want(t, e.runWith(Options{Profile: "nope"})[CheckContext], Fail, "Profile 'nope' does not exist", "qkit context switch --create nope")
}

func TestDirs(t *testing.T) {
	e := newEnv(t).agent("kiro")
	if err := os.WriteFile(filepath.Join(e.home, "state"), []byte("a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.home, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	got := e.run()
	state := filepath.Join(e.home, "state")
	want(t, got[CheckState], Fail, "the state folder "+state+" cannot be created: "+state+" is a file", "mv "+state+" "+state+".bak")
	want(t, got[CheckQuestions], Fail, "cannot be created: "+state+" is a file", "mv "+state+" "+state+".bak")
	want(t, got[CheckData], OK, "the data folder "+filepath.Join(e.home, "data")+" is writable", "")
	if entries, _ := os.ReadDir(filepath.Join(e.home, "data")); len(entries) != 0 {
		t.Errorf("the probe file was left: %v", entries)
	}
}

// The page announced in the state folder: answering, or announced by a live process that does not.
func TestPage(t *testing.T) {
	e := newEnv(t).agent("kiro")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	announce := func(url string) {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"url": url, "process": questions.Self()})
		if err := os.MkdirAll(filepath.Join(e.home, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.home, "state", "questions-serve.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	announce(srv.URL + "/")
	want(t, e.run()[CheckPage], OK, "served at "+srv.URL+"/ by process ", "")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	announce(closed)
	pid := questions.Self().PID
	c := e.run()[CheckPage]
	want(t, c, Warn, "announces a page at "+closed+", but it does not answer", "kill "+strconv.Itoa(pid)+"; qkit questions serve")
}

func TestNATS(t *testing.T) {
	n, err := natstest.Start(natstest.Options{JetStream: true, StoreDir: t.TempDir(), Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	e := newEnv(t).agent("kiro")
	e.sets["questions.store"] = "nats"
	e.sets["questions.nats_url"] = n.URL()
	want(t, e.run()[CheckQuestions], Fail, "Authorization Violation", "export QKIT_QUESTIONS_NATS_TOKEN=TOKEN")
	e.vars["QKIT_QUESTIONS_NATS_TOKEN"] = "s3cret"
	want(t, e.run()[CheckQuestions], OK, "NATS store: "+n.URL()+" (bucket qkit-questions-default), reachable, authorized", "")
	n.Stop()
	want(t, e.run()[CheckQuestions], Fail, "cannot connect", "nats-server -js")
}

func TestLogIn(t *testing.T) {
	var out, errOut strings.Builder
	record := filepath.Join(t.TempDir(), "argv")
	cmd := fakeqtest.Flavour(t, "kiro", "FAKEQ_RECORD="+record)
	login, err := LogIn(t.Context(), cmd, strings.NewReader(""), &out, &errOut)
	if err != nil || !login.LoggedIn || out.String() != "Logged in successfully\n" {
		t.Fatalf("%+v %v %q", login, err, out.String())
	}
	if data, _ := os.ReadFile(record); !strings.HasPrefix(string(data), `["login"]`) {
		t.Fatalf("ran %s", data)
	}
	t.Setenv("FAKEQ_LOGIN_EXIT", "3")
	if _, err := LogIn(t.Context(), cmd, nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "login failed (exit status 3)") {
		t.Fatalf("failed login: %v", err)
	}
	t.Setenv("FAKEQ_LOGIN_EXIT", "")
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	if _, err := LogIn(t.Context(), cmd, nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Fatalf("still logged out: %v", err)
	}
	if _, err := LogIn(t.Context(), "qkit-no-such-agent", nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing: %v", err)
	}
}
