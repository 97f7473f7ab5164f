package acpclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// RunOptions are one prompt through an ACP agent: the text runner's limits and request, and what
// ACP adds.
type RunOptions struct {
	// Limits are agent.* (command, timeout, size cap, default model, grace, logger).
	Limits agent.Limits
	// Request is the prompt and the agent flags (Agent, Model, TrustAll, TrustTools, Dir).
	// Resume and Verbose have no ACP meaning: load a session with SessionID instead.
	Request agent.Request
	// SessionID, when set, is loaded (session/load) instead of opening a new session.
	SessionID string
	// Env is the agent's environment; nil means the caller's.
	Env []string
	// LoadTimeout bounds session/load; 0 means 30 seconds.
	LoadTimeout time.Duration
	// ClientVersion is qkit's version, sent in initialize.
	ClientVersion string
	// OnEvent receives every event of the run as it happens (see Options.OnEvent).
	OnEvent func(agent.Event)
	// Permission, Files, Terminals and Access answer the agent (see Options).
	Permission PermissionFunc
	Files      Files
	Terminals  Terminals
	Access     AccessFunc
}

// Result is what a run produced: the text runner's Result (Output with the same truncation and
// timeout notices, ExitCode of the agent process, its Stderr, Duration, Argv, and Tools: the turn's
// tool calls in the order they started, as they ended) and the turn's ACP facts.
type Result struct {
	agent.Result
	// SessionID is the agent's session (to load it again later).
	SessionID string
	// StopReason is the agent's: end_turn, refusal (a tool was rejected), cancelled,
	// max_tokens, max_turn_requests; empty when the turn did not end with one.
	StopReason string
	// Usage adds up what the agent reported (credits; the last context percentage and duration).
	Usage agent.Usage
	// Agent is the agent's name and version from initialize.
	Agent string
}

// Argv is the command line that starts the agent (agent.Description.ACPArgv): `<command> acp
// [--agent A] [--model M] [-a] [--trust-tools=a,b]` for q and kiro-cli, the flags for the first
// session; another ACP agent's command line as given (Run sets its mode and model in the session,
// and the permission policy answers for the tools).
func Argv(l agent.Limits, r agent.Request) []string {
	return agent.Describe(l.Command).ACPArgv(r.Agent, agent.ModelOf(l, r), r.TrustAll, r.TrustTools)
}

// Run starts the agent, opens (or loads) a session, sends the prompt, streams the events, and
// stops the agent, with the text runner's semantics (agent.Run): a run that hits Limits.Timeout
// (not counting the time Permission takes: a person may be deciding) is not an error (Result.TimedOut, the partial reply and a notice); the reply is capped at
// Limits.MaxResponseSize; the reply and the thoughts go through the terminal-safe filter
// (termtext.Stripper, the chat runner's) unless Limits.RawText; when ctx is cancelled the turn is cancelled, the agent stopped, and the
// error wraps ctx.Err(). A logged-out agent is an *agent.LoginError, caught as the text runner
// catches it: at initialize when it says so (kiro's kiro-login method, see Start), else by asking
// whoami once it has sent nothing of the turn for Limits.LoginProbeAfter. Every path ends with the
// agent's whole process group gone. Run is a Runner with one prompt.
func Run(ctx context.Context, o RunOptions) (Result, error) {
	r := NewRunner(ctx, o)
	res, err := r.Prompt(ctx, o.Request.Prompt)
	res.ExitCode, res.Stderr = r.Close()
	return res, err
}

// Runner is one run of an ACP agent that may take several prompts (qkit ask --schema's
// retries): the first Prompt starts the agent and opens (or loads) the session, each later one
// is another session/prompt on the same session over the same connection, and Close stops the
// agent. Limits.Timeout bounds the whole run, every prompt and the time between them (not the
// time Permission takes), not each prompt. A Runner is used by one goroutine.
type Runner struct {
	o     RunOptions
	outer context.Context // the caller's: the run ends with it
	// ctx is the run's: it ends with outer, at the timeout (errTimeout), or when the login probe
	// finds the agent waiting for a login (errLogin); cancel says which.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	deadline *pausableDeadline
	probe    *agent.LoginProbe
	spoke    atomic.Bool // the agent has sent something of a turn
	live     *runGate

	argv      []string
	dir       string
	err       error // the run cannot go on: nothing valid to run, or it ended
	conn      *Conn
	opened    bool // the agent started and the session is open
	agentName string
	sessionID string
	started   time.Time

	closed   bool
	exitCode int
	stderr   string
}

// NewRunner prepares a run under ctx; nothing starts before the first Prompt.
func NewRunner(ctx context.Context, o RunOptions) *Runner {
	l, req := o.Limits, o.Request
	r := &Runner{o: o, outer: ctx, argv: Argv(l, req), live: &runGate{}, started: time.Now(), exitCode: -1}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	if r.dir, r.err = runDir(req.Dir); r.err != nil {
		return r
	}
	if l.Timeout > 0 {
		r.deadline = newPausableDeadlineOn(l.Clock, l.Timeout, func() { r.cancel(errTimeout) })
		if perm := o.Permission; perm != nil {
			// Waiting for a person's answer is not the agent's time.
			r.o.Permission = func(ctx context.Context, req PermissionRequest) (Decision, error) {
				r.deadline.pause()
				defer r.deadline.resume()
				return perm(ctx, req)
			}
		}
	}
	// An agent that says nothing for a while may be waiting for a login nobody can give (one that
	// did not say so in initialize): then, and only then, whoami is asked, as the text runner does.
	r.probe = agent.StartLoginProbe(r.ctx, l, o.Env, r.spoke.Load, func() { r.cancel(errLogin) })
	return r
}

func runDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	return filepath.Abs(dir)
}

// SessionID is the run's session, once the first Prompt has opened or loaded it.
func (r *Runner) SessionID() string { return r.sessionID }

// Prompt sends prompt: the first starts the agent and opens the session, a later one goes to the
// same session. The Result is this prompt's (its reply, tools, usage and stop reason; ExitCode and
// Stderr only when the run ended with it), with Run's semantics: a timeout is no error
// (Result.TimedOut), ctx cancelled cancels the turn and the error wraps ctx.Err(). ctx may end
// before the run's context (a budget stops one turn); the connection then stays open for another
// prompt. A prompt that ends the run (the timeout, the run's context, the agent gone, a start or a
// session that failed) stops the agent before it returns, and later prompts fail.
func (r *Runner) Prompt(ctx context.Context, prompt string) (Result, error) {
	l := r.o.Limits
	res := Result{Result: agent.Result{ExitCode: -1, Argv: r.argv}, Agent: r.agentName, SessionID: r.sessionID}
	if r.err != nil {
		return res, r.err
	}
	req := r.o.Request
	req.Prompt = prompt
	if err := agent.Validate(l, req); err != nil {
		return res, err // nothing was sent: the run goes on
	}
	start := time.Now()
	if !r.opened {
		start = r.started // the first prompt's time includes the start
	}
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unlink := context.AfterFunc(r.ctx, func() { cancel(context.Cause(r.ctx)) })
	defer unlink()

	reply := agent.NewReply(l.MaxResponseSize)
	var tools agent.ToolLog
	// The agent's text goes through the filter the chat runner reads stdout with, one stream each
	// for the reply and the thoughts (a sequence split across chunks is still removed whole).
	raw := l.RawText()
	var replyText, thoughtText termtext.Stripper
	var filtered []byte
	// handle takes one event of the agent's into this prompt; the gate calls it one event at a time.
	handle := func(sessionID, sid string, ev agent.Event) {
		if sessionID != "" && sessionID != sid {
			// Another session of the agent's (kiro's subagents stream under their own): its
			// credits are this run's cost, the rest is not this run's reply.
			if ev.Type == agent.EventUsage {
				res.Usage.Credits += ev.Usage.Credits
			}
			return
		}
		if ev.Type != agent.EventUsage { // kiro's metadata comes with a new session, logged in or not
			r.spoke.Store(true)
		}
		if !raw && (ev.Type == agent.EventMessage || ev.Type == agent.EventThought) {
			f := &replyText
			if ev.Type == agent.EventThought {
				f = &thoughtText
			}
			filtered = f.Strip(filtered[:0], []byte(ev.Text))
			if len(filtered) == 0 {
				return // nothing of it shows
			}
			if string(filtered) != ev.Text { // most chunks have nothing to remove: no copy then
				ev.Text = string(filtered)
			}
		}
		switch ev.Type {
		case agent.EventMessage:
			reply.Write([]byte(ev.Text))
		case agent.EventUsage:
			res.Usage.Add(*ev.Usage)
		default:
			tools.Record(ev)
		}
		if r.o.OnEvent != nil {
			r.o.OnEvent(ev)
		}
	}
	r.live.attach(handle)

	var err error
	if !r.opened {
		err = r.open(pctx)
		r.opened = err == nil
		res.Agent, res.SessionID = r.agentName, r.sessionID
	}
	var stopReason acp.StopReason
	if err == nil && r.ctx.Err() != nil {
		err = context.Canceled // the run ended between two prompts (its timeout): nothing more is sent
	}
	if err == nil {
		stopReason, err = r.conn.Prompt(pctx, r.sessionID, []acp.ContentBlock{acp.TextBlock(prompt)})
	}
	// Only a run the deadline stopped timed out (Close may outlast it).
	stoppedByCtx := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	timedOut := stoppedByCtx && ctx.Err() == nil && errors.Is(context.Cause(r.ctx), errTimeout)
	login := stoppedByCtx && ctx.Err() == nil && errors.Is(context.Cause(r.ctx), errLogin)
	if r.ctx.Err() != nil || !r.opened || r.conn.Err() != nil {
		// The run is over: the agent goes now, before the caller sees the result.
		res.ExitCode, res.Stderr = r.Close()
		r.err = errors.New("the ACP run has ended")
	}
	r.live.detach() // permission requests may outlast the turn: this prompt's state is its own from here
	res.StopReason = string(stopReason)
	res.Duration = time.Since(start)

	var timeout time.Duration
	if timedOut {
		timeout = l.Timeout
	}
	res.Tools = tools.Calls
	reply.Finish(&res.Result, l.MaxResponseSize, timeout, l.Logger)
	switch {
	case (ctx.Err() != nil || r.outer.Err() != nil) && err != nil:
		cause := ctx.Err()
		if cause == nil {
			cause = r.outer.Err()
		}
		return res, fmt.Errorf("agent run cancelled: %w", cause)
	case timedOut:
		return res, nil
	case login:
		return res, r.probe.Found()
	}
	return res, err
}

// open starts the agent and opens or loads the session. An agent that takes no launch flags (an
// ACP agent given as a command line) gets --agent as the session's mode and the model through the
// session, before the prompt; a refusal fails the run.
func (r *Runner) open(ctx context.Context) error {
	l, o := r.o.Limits, r.o
	conn, err := Start(ctx, Options{
		Command: r.argv[0], Args: r.argv[1:], Agent: agent.Describe(l.Command), Dir: r.dir, Env: o.Env, Logger: l.Logger, Grace: l.Grace,
		LoadTimeout: o.LoadTimeout, ClientVersion: o.ClientVersion, OnEvent: r.live.event, Permission: o.Permission, Files: o.Files, Terminals: o.Terminals, Access: o.Access,
	})
	if nacp := (*NotACPError)(nil); errors.As(err, &nacp) && l.StateDir != "" {
		// What agent.backend auto learned (acp) is out of date: the next auto run probes again.
		if ferr := ForgetBackend(BackendCacheFile(l.StateDir), l.Command); ferr != nil && l.Logger != nil {
			l.Logger.Warn("could not forget the agent's learned backend", "error", ferr)
		}
	}
	if err != nil {
		return err
	}
	r.conn, r.agentName = conn, agentName(conn.Info())
	var choices SessionChoices
	if o.SessionID != "" {
		r.live.replaying(true)
		resp, err := conn.LoadSession(ctx, o.SessionID, r.dir, nil)
		r.live.replaying(false)
		if err != nil {
			return err
		}
		r.sessionID, choices = o.SessionID, LoadChoices(resp)
	} else {
		s, err := conn.NewSession(ctx, r.dir, nil)
		if err != nil {
			return err
		}
		r.sessionID, choices = string(s.SessionId), NewChoices(s)
	}
	if d := conn.agent(); !d.LaunchFlags() {
		if a := o.Request.Agent; a != "" {
			if err := conn.SetMode(ctx, r.sessionID, a, choices); err != nil {
				return err
			}
		}
		if m := agent.ModelOf(l, o.Request); m != "" {
			if err := conn.SetModel(ctx, r.sessionID, m, choices); err != nil {
				return err
			}
		}
	}
	r.live.open(r.sessionID)
	return nil
}

// Close stops the agent and its whole process group, and returns the agent's exit status (-1 if
// a signal ended it or it never ran) and the end of its stderr. It is safe to call more than once.
func (r *Runner) Close() (exitCode int, stderr string) {
	if r.closed {
		return r.exitCode, r.stderr
	}
	r.closed = true
	if r.deadline != nil {
		r.deadline.stop()
	}
	if r.probe != nil {
		r.probe.Stop()
	}
	if r.conn != nil {
		r.conn.Close()
		r.exitCode, r.stderr = r.conn.ExitCode(), r.conn.Stderr()
	}
	r.err = errors.New("the ACP run has ended")
	r.cancel(nil)
	return r.exitCode, r.stderr
}

// errTimeout ends a run that used up Limits.Timeout.
var errTimeout = fmt.Errorf("the run hit its timeout: %w", context.DeadlineExceeded)

// errLogin ends a run whose silent agent whoami says is not logged in.
var errLogin = errors.New("the agent waits for a login")

// realClock is the time package's clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// pausableDeadline calls fire once d has passed, not counting the time it was paused.
type pausableDeadline struct {
	mu        sync.Mutex
	clock     agent.Clock
	fire      func() // the timer's: marks the deadline fired, then calls the caller's
	stopTimer func() bool
	remaining time.Duration
	since     time.Time
	paused    int
	fired     bool
}

func newPausableDeadline(d time.Duration, fire func()) *pausableDeadline {
	return newPausableDeadlineOn(nil, d, fire)
}

// newPausableDeadlineOn is newPausableDeadline counting on clock (nil: realClock).
func newPausableDeadlineOn(clock agent.Clock, d time.Duration, fire func()) *pausableDeadline {
	if clock == nil {
		clock = realClock{}
	}
	p := &pausableDeadline{clock: clock, remaining: d, since: clock.Now()}
	p.fire = func() {
		p.mu.Lock()
		p.fired = true
		p.mu.Unlock()
		fire()
	}
	p.stopTimer = clock.AfterFunc(d, p.fire)
	return p
}

func (p *pausableDeadline) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == 0 && !p.fired && p.stopTimer() {
		p.remaining -= p.clock.Now().Sub(p.since)
	}
	p.paused++
}

func (p *pausableDeadline) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused--
	if p.paused == 0 && !p.fired {
		p.since = p.clock.Now()
		p.stopTimer = p.clock.AfterFunc(max(p.remaining, 0), p.fire)
	}
}

func (p *pausableDeadline) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTimer()
}

// runGate passes the agent's events to the prompt in flight once it knows the run's session.
// Events that come before (kiro's first _kiro.dev/metadata may overtake session/new's answer on
// its way to the caller), or between two prompts of a run, are held and passed on, in order, to
// the next prompt; those of a session/load's replay are history, not this run's, and are dropped.
type runGate struct {
	mu      sync.Mutex
	handle  func(sessionID, sid string, ev agent.Event) // the prompt's; nil between prompts
	sid     string
	replay  bool
	pending []heldEvent
}

type heldEvent struct {
	sessionID string
	ev        agent.Event
}

// event is the connection's OnEvent.
func (g *runGate) event(sessionID string, ev agent.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.sid != "" && g.handle != nil:
		g.handle(sessionID, g.sid, ev)
	case !g.replay:
		g.pending = append(g.pending, heldEvent{sessionID, ev})
	}
}

func (g *runGate) replaying(on bool) {
	g.mu.Lock()
	g.replay, g.pending = on, nil
	g.mu.Unlock()
}

// open makes sid the run's session and passes on what was held for it.
func (g *runGate) open(sid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sid = sid
	g.flush()
}

// attach makes h the prompt in flight's, and passes on what was held for it.
func (g *runGate) attach(h func(sessionID, sid string, ev agent.Event)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handle = h
	g.flush()
}

// detach ends the prompt's part: once it returns, its handle is not running and is not called again.
func (g *runGate) detach() {
	g.mu.Lock()
	g.handle = nil
	g.mu.Unlock()
}

func (g *runGate) flush() {
	if g.sid == "" || g.handle == nil {
		return
	}
	for _, h := range g.pending {
		g.handle(h.sessionID, g.sid, h.ev)
	}
	g.pending = nil
}
