// Package doctor finds out, in one bounded pass, why qkit would not work here: the configuration
// and the context files, the agent CLI (found, its version and flavour, its login, the backend qkit
// will use with it, what it answers to an ACP initialize, its models), the questions store and page,
// and the folders qkit writes to. Each finding is a Check with a status and, when it is not ok, the
// exact command that fixes it. It is the core of `qkit doctor`, which the internal-command registry
// exposes as a read.
//
// Run changes nothing: it reads the backend cache without writing it (ChooseBackend would), asks
// the agent only what changes nothing (--version, whoami, initialize, chat --list-models), never
// writes the model cache, and removes the one temporary file it creates to test a folder. The one
// exception is a NATS store, whose bucket is created on the server if it is missing, as every
// other use of the store would.
package doctor

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/config"
)

// Status is how a check went.
type Status string

// The statuses, best first. Only Fail makes `qkit doctor` exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// The checks, in the order of the report. The names are stable: scripts select on them.
const (
	CheckConfig    = "config"         // config.yaml found and parsed, its values valid
	CheckContext   = "context"        // the active profile, and the files and tokens it sends from here
	CheckAgent     = "agent"          // agent.command found on PATH
	CheckVersion   = "version"        // its --version, and so its flavour (q 1.x, kiro-cli)
	CheckLogin     = "login"          // whoami says someone is logged in
	CheckBackend   = "backend"        // acp or chat, and why
	CheckACP       = "acp"            // what `<agent> acp` answers to initialize
	CheckModels    = "models"         // the models --model takes, and agent.model among them
	CheckQuestions = "questions"      // the questions store: its folder, or the NATS server
	CheckPage      = "questions-page" // a running `qkit questions serve`
	CheckState     = "state-dir"      // the state folder is writable
	CheckData      = "data-dir"       // the data folder is writable
)

// Names lists every check, in the order of the report.
var Names = []string{CheckConfig, CheckContext, CheckAgent, CheckVersion, CheckLogin, CheckBackend, CheckACP,
	CheckModels, CheckQuestions, CheckPage, CheckState, CheckData}

// Check is one line of the report. Its JSON field names are stable (`qkit doctor --json`).
type Check struct {
	// Name is one of Names.
	Name string `json:"name"`
	// Status is ok, warn or fail.
	Status Status `json:"status"`
	// Detail says what was found, in one line.
	Detail string `json:"detail"`
	// Fix is the command that fixes what is not ok; empty when the status is ok.
	Fix string `json:"fix"`
}

// Report is every check, in the order of Names.
type Report struct {
	// Status is the worst status of the checks.
	Status Status  `json:"status"`
	Checks []Check `json:"checks"`
}

// Failed returns the names of the checks that failed.
func (r Report) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c.Name)
		}
	}
	return out
}

// Timeout bounds the whole pass: the probes run at the same time, and one still running when it
// passes is stopped and reported as a warning. `qkit doctor --help` documents it.
const Timeout = 1500 * time.Millisecond

// stopGrace is how long Run waits, past the timeout, for probes to stop what they started.
const stopGrace = 400 * time.Millisecond

// Options are what the checks look at.
type Options struct {
	// Config is the loaded configuration: when the file could not be read or parsed, the one
	// loaded without it (config.LoadOptions.SkipFile), and ConfigErr says why.
	Config    *config.Config
	ConfigErr error
	// Profile is the global --profile flag; empty means the active profile.
	Profile string
	// Dir is the folder the context files are resolved from (the working directory).
	Dir string
	// Version is qkit's, sent in the ACP initialize.
	Version string
	// Timeout replaces Timeout when positive (tests).
	Timeout time.Duration
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
}

// group is a set of checks that one probe produces, in order.
type group struct {
	names []string
	run   func(ctx context.Context) []Check
	// late is the fix of its checks when the probe does not finish in time: a command that shows,
	// without a time limit, what takes so long.
	late string
}

// Run runs every check, at the same time, bounded by the timeout, and returns them in the order of
// Names. ctx may end it sooner.
func Run(ctx context.Context, o Options) Report {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	one := func(name, late string, f func(ctx context.Context) Check) group {
		return group{[]string{name}, func(ctx context.Context) []Check { return []Check{f(ctx)} }, late}
	}
	command := config.AgentCommand.Get(o.Config)
	groups := []group{
		one(CheckConfig, "", func(context.Context) Check { return checkConfig(o) }),
		one(CheckContext, "qkit context show", func(context.Context) Check { return checkContext(o) }),
		{[]string{CheckAgent, CheckVersion, CheckLogin, CheckBackend, CheckACP, CheckModels},
			func(ctx context.Context) []Check { return checkAgent(ctx, o, timeout) }, shellJoin(command, "whoami")},
		one(CheckQuestions, "qkit questions list", func(ctx context.Context) Check { return checkQuestions(ctx, o) }),
		one(CheckPage, "", func(ctx context.Context) Check { return checkPage(ctx, o) }),
		one(CheckState, "", func(context.Context) Check { return checkDir(CheckState, "state", o.Config.Paths.State) }),
		one(CheckData, "", func(context.Context) Check { return checkDir(CheckData, "data", o.Config.Paths.Data) }),
	}
	results := make([][]Check, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { results[i] = bounded(ctx, g, timeout) })
	}
	wg.Wait()
	rep := Report{Status: OK}
	for _, r := range results {
		for _, c := range r {
			c.Detail, c.Fix = oneLine(c.Detail), oneLine(c.Fix)
			if c.Status == OK {
				c.Fix = ""
			}
			rep.Checks = append(rep.Checks, c)
			if rank(c.Status) > rank(rep.Status) {
				rep.Status = c.Status
			}
		}
	}
	return rep
}

// bounded runs g, and gives up on it stopGrace after ctx ends: its checks are then warnings that
// say so. Every probe stops by itself once ctx ends (the processes it started are stopped, its
// connection attempts are bounded by the time that was left), so a probe given up on here ends
// shortly after, on its own; only reading the folders a context rule names takes no ctx, and it
// ends when the walk does.
func bounded(ctx context.Context, g group, timeout time.Duration) []Check {
	done := make(chan []Check, 1)
	go func() { done <- g.run(ctx) }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
	}
	out := make([]Check, len(g.names))
	for i, name := range g.names {
		out[i] = Check{Name: name, Status: Warn, Detail: "not checked: the check did not finish within " + timeout.String(), Fix: g.late}
	}
	return out
}

func rank(s Status) int {
	switch s {
	case Fail:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// oneLine makes outside text (what the agent printed, paths, server errors) safe for a terminal
// (agent.Printable) and one line long.
func oneLine(s string) string {
	return strings.Join(strings.Fields(agent.Printable(s)), " ")
}
