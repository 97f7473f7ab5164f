package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/qkit-cli/qkit/internal/fakeq"
	"github.com/qkit-cli/qkit/internal/proctest"
	"github.com/qkit-cli/qkit/internal/streamjson/streamjsontest"
)

func TestMain(m *testing.M) {
	if name := filepath.Base(os.Args[0]); name != "qkit" && name != "q" && name != "kiro-cli" && name != "lockholder" {
		moreParallel()
	}
	testscript.Main(m, map[string]func(){
		"qkit": func() { os.Exit(runQkit(os.Args[1:])) },
		"q":    func() { os.Exit(fakeq.Main()) },
		// kiro-cli is the same fake; scripts set FAKEQ_FLAVOUR=kiro for it to act as kiro-cli 2.x.
		"kiro-cli": func() { os.Exit(fakeq.Main()) },
		// lockholder holds a file's lock while a command waits for it (lockholder_test.go).
		"lockholder": func() { os.Exit(lockHolder(os.Args[1:])) },
	})
}

// moreParallel runs more of this package's parallel tests at once than there are cores, unless
// -test.parallel is given: the testscripts and server tests spend most of their time waiting (for
// timeouts, signals, servers and the processes they start), so with one script per core the cores
// sat mostly idle and the scripts took about twice as long.
func moreParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(8, 4*runtime.GOMAXPROCS(0))))
	}
}

// slowScripts are the scripts that wait longest (on agents sitting into timeouts, mostly), by
// name: TestScripts starts them first, so that no one of them is left running alone at the end
// (started last, the slowest took the package's tests 40 s instead of about 25).
var slowScripts = []string{"ask_acp_timeouts", "ask_errors", "ask_backend_parity", "doctor_agent", "doctor",
	"ask_schema_timeout", "settings", "ask_acp_login"}

// scriptsInOrder lists testscripts/*.txtar, slowScripts first.
func scriptsInOrder(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testscripts", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testscripts: %v", err)
	}
	rank := func(f string) int {
		if i := slices.Index(slowScripts, strings.TrimSuffix(filepath.Base(f), ".txtar")); i >= 0 {
			return i
		}
		return len(slowScripts)
	}
	for _, name := range slowScripts {
		if !slices.Contains(files, filepath.Join("testscripts", name+".txtar")) {
			t.Errorf("slowScripts names %s, which is not a script", name)
		}
	}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	return files
}

// inOrder is testscript's T for TestScripts: it starts the scripts in the order testscript hands
// them over (scriptsInOrder), as many at once as -parallel allows, each a subtest run from a
// goroutine of its own. (testscript makes each script a parallel subtest, and the testing package
// resumes those in an order of its own, mostly the last first.) In a script's subtest, slots is
// nil: Run runs a subtest as testing.T does.
type inOrder struct {
	*testing.T
	slots chan struct{}
	wg    *sync.WaitGroup
}

func (t inOrder) Run(name string, f func(testscript.T)) {
	if t.slots == nil {
		t.T.Run(name, func(t *testing.T) { f(inOrder{T: t}) })
		return
	}
	t.slots <- struct{}{}
	t.wg.Go(func() {
		defer func() { <-t.slots }()
		t.T.Run(name, func(t *testing.T) { f(inOrder{T: t}) })
	})
}

// Parallel does nothing: Run already runs each script beside the others.
func (inOrder) Parallel() {}

func (inOrder) Verbose() bool { return testing.Verbose() }

// TestScripts runs testscripts/*.txtar. QKIT_UPDATE_GOLDEN=1 rewrites the cmp goldens in place.
func TestScripts(t *testing.T) {
	t.Parallel()
	parallel, err := strconv.Atoi(flag.Lookup("test.parallel").Value.String())
	if err != nil || parallel < 1 {
		t.Fatalf("-test.parallel: %v", err)
	}
	scripts := inOrder{T: t, slots: make(chan struct{}, parallel), wg: &sync.WaitGroup{}}
	defer scripts.wg.Wait()
	var deadline time.Time
	if d, ok := t.Deadline(); ok {
		deadline = d // as testscript.Run sets it
	}
	testscript.RunT(scripts, testscript.Params{
		Deadline:            deadline,
		Files:               scriptsInOrder(t),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("QKIT_UPDATE_GOLDEN") == "1",
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("QKIT_HOME", filepath.Join(env.WorkDir, ".qkit"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
			env.Setenv("NO_COLOR", "")
			for _, name := range []string{"AGENT_TIMEOUT", "AGENT_MAX_RESPONSE_SIZE", "ENABLE_ADDITIONAL_TOOLS"} {
				env.Setenv(name, "")
			}
			// The fake q speaks ACP (`q acp`), so agent.backend=auto would take it; scripts that
			// test the ACP backend or the choice say so (ask_acp*.txtar), the others keep chat.
			env.Setenv("QKIT_AGENT_BACKEND", "chat")
			// Every stream-json run leaves a copy of its stdout here, validated when the script ends.
			copies, err := os.MkdirTemp("", "qkit-streams-")
			if err != nil {
				return err
			}
			env.Setenv(streamCopiesEnv, copies)
			env.Defer(func() {
				defer os.RemoveAll(copies)
				if err := checkStreamCopies(copies); err != nil {
					env.T().Fatal(err)
				}
			})
			return os.MkdirAll(home, 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"pty":         ptyCmd,
			"nats-server": natsServerCmd,
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				// exits CODE PROG [ARGS...]: run PROG like exec and require exit status CODE;
				// stdout and stderr are kept for the stdout/stderr/cmp commands that follow.
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE PROG [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("%s: %v", args[1], err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
			"validate-stream": func(ts *testscript.TestScript, neg bool, args []string) {
				// validate-stream FILE: every line of FILE is valid against the stream-json schema,
				// and the last one is the result.
				if len(args) != 1 {
					ts.Fatalf("usage: validate-stream FILE")
				}
				n, err := streamjsontest.ValidateStream([]byte(ts.ReadFile(args[0])))
				if neg {
					if err == nil {
						ts.Fatalf("%s: all %d lines are valid", args[0], n)
					}
					return
				}
				if err != nil {
					ts.Fatalf("%s: %v", args[0], err)
				}
			},
			"cmptokens": func(ts *testscript.TestScript, neg bool, args []string) {
				// cmptokens FILE GOLDEN: cmpenv, with every token estimate ("~N tokens",
				// "tokens": N) read as any number. An estimate counts a file's [path] header, and
				// $WORK's length differs from run to run; the numbers are checked by other lines.
				if neg || len(args) != 2 {
					ts.Fatalf("usage: cmptokens FILE GOLDEN")
				}
				got := ts.ReadFile(args[0])
				want := os.Expand(ts.ReadFile(args[1]), ts.Getenv)
				if anyTokens(got) != anyTokens(want) {
					ts.Fatalf("%s and %s differ (token estimates aside):\n--- %s\n%s\n--- %s\n%s", args[0], args[1], args[0], got, args[1], want)
				}
			},
			"mkfile": func(ts *testscript.TestScript, neg bool, args []string) {
				// mkfile NAME BYTES: write a file of BYTES letters "a", for size limits.
				if neg || len(args) != 2 {
					ts.Fatalf("usage: mkfile NAME BYTES")
				}
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), bytes.Repeat([]byte("a"), n), 0o644))
			},
			"gone": func(ts *testscript.TestScript, neg bool, args []string) {
				// gone PIDFILE: the process whose id PIDFILE holds stops running within ten
				// seconds (a zombie has stopped). Where that cannot be told, the script fails.
				if neg || len(args) != 1 {
					ts.Fatalf("usage: gone PIDFILE")
				}
				pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
				ts.Check(err)
				ts.Check(proctest.WaitGone(pid, 10*time.Second))
			},
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				// sleep DURATION: wait, for scripts that race a background command.
				if neg || len(args) != 1 {
					ts.Fatalf("usage: sleep DURATION")
				}
				d, err := time.ParseDuration(args[0])
				ts.Check(err)
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				<-ctx.Done()
			},
		},
	})
}

// tokenEstimate matches a token estimate in context show's text and JSON.
var tokenEstimate = regexp.MustCompile(`~\d+ tokens?\b|"(total_)?tokens": \d+`)

// anyTokens is s with every token estimate replaced by one placeholder.
func anyTokens(s string) string { return tokenEstimate.ReplaceAllString(s, "<tokens>") }
