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
// agent's whole process group gone.
func Run(ctx context.Context, o RunOptions) (Result, error) {
	l, r := o.Limits, o.Request
	res := Result{Result: agent.Result{ExitCode: -1, Argv: Argv(l, r)}}
	if err := agent.Validate(l, r); err != nil {
		return res, err
	}
	dir := r.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return res, err
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return res, err
	}
	start := time.Now()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var deadline *pausableDeadline
	if l.Timeout > 0 {
		deadline = newPausableDeadline(l.Timeout, func() { cancel(errTimeout) })
		defer deadline.stop()
		if perm := o.Permission; perm != nil {
			// Waiting for a person's answer is not the agent's time.
			o.Permission = func(ctx context.Context, req PermissionRequest) (Decision, error) {
				deadline.pause()
				defer deadline.resume()
				return perm(ctx, req)
			}
		}
	}

	reply := agent.NewReply(l.MaxResponseSize)
	index := map[string]int{}
	// An agent that says nothing for a while may be waiting for a login nobody can give (one that
	// did not say so in initialize): then, and only then, whoami is asked, as the text runner does.
	var spoke atomic.Bool // the agent has sent something of this run's turn
	probe := agent.StartLoginProbe(runCtx, l, agent.EnvLookup(o.Env), spoke.Load, func() { cancel(errLogin) })
	defer probe.Stop()
	// The agent's text goes through the filter the chat runner reads stdout with, one stream each
	// for the reply and the thoughts (a sequence split across chunks is still removed whole).
	raw := l.RawText()
	var replyText, thoughtText termtext.Stripper
	var filtered []byte
	// handle takes one event of the agent's into the run; gate calls it one event at a time.
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
			spoke.Store(true)
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
			res.Usage.Credits += ev.Usage.Credits
			if ev.Usage.ContextPercent > 0 {
				res.Usage.ContextPercent = ev.Usage.ContextPercent
			}
			if ev.Usage.TurnDurationMs > 0 {
				res.Usage.TurnDurationMs = ev.Usage.TurnDurationMs
			}
			res.Usage.InputTokens += ev.Usage.InputTokens
			res.Usage.OutputTokens += ev.Usage.OutputTokens
		case agent.EventToolCall, agent.EventToolCallUpdate:
			if i, ok := index[ev.Tool.ID]; ok {
				res.Tools[i] = res.Tools[i].Merge(*ev.Tool)
			} else {
				index[ev.Tool.ID] = len(res.Tools)
				res.Tools = append(res.Tools, *ev.Tool)
			}
		case agent.EventPermissionDecided:
			if i, ok := index[ev.Permission.Tool.ID]; ok && ev.Permission.Tool.Denied {
				res.Tools[i].Denied = true
			}
		}
		if o.OnEvent != nil {
			o.OnEvent(ev)
		}
	}
	live := &runGate{handle: handle}
	conn, err := Start(runCtx, Options{
		Command: res.Argv[0], Args: res.Argv[1:], Agent: agent.Describe(l.Command), Dir: dir, Env: o.Env, Logger: l.Logger, Grace: l.Grace,
		LoadTimeout: o.LoadTimeout, ClientVersion: o.ClientVersion, OnEvent: live.event, Permission: o.Permission, Files: o.Files, Terminals: o.Terminals, Access: o.Access,
	})
	var stopReason acp.StopReason
	if nacp := (*NotACPError)(nil); errors.As(err, &nacp) && l.StateDir != "" {
		// What agent.backend auto learned (acp) is out of date: the next auto run probes again.
		if ferr := ForgetBackend(BackendCacheFile(l.StateDir), l.Command); ferr != nil && l.Logger != nil {
			l.Logger.Warn("could not forget the agent's learned backend", "error", ferr)
		}
	}
	if err == nil {
		res.Agent = agentName(conn.Info())
		stopReason, err = session(runCtx, conn, o, dir, &res, live)
	}
	// Only a run the deadline stopped timed out (Close may outlast it).
	stoppedByCtx := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	timedOut := stoppedByCtx && ctx.Err() == nil && errors.Is(context.Cause(runCtx), errTimeout)
	if conn != nil {
		conn.Close()
		res.ExitCode = conn.ExitCode()
		res.Stderr = conn.Stderr()
	}
	live.mu.Lock() // permission requests may outlast the turn
	defer live.mu.Unlock()
	res.StopReason = string(stopReason)
	res.Duration = time.Since(start)

	var timeout time.Duration
	if timedOut {
		timeout = l.Timeout
	}
	reply.Finish(&res.Result, l.MaxResponseSize, timeout)
	switch {
	case ctx.Err() != nil && err != nil:
		return res, fmt.Errorf("agent run cancelled: %w", ctx.Err())
	case timedOut:
		return res, nil
	case stoppedByCtx && errors.Is(context.Cause(runCtx), errLogin):
		return res, probe.Found()
	}
	return res, err
}

// session opens or loads the session, then prompts. An agent that takes no launch flags (an ACP
// agent given as a command line) gets --agent as the session's mode and the model through the
// session, before the prompt; a refusal fails the run.
func session(ctx context.Context, conn *Conn, o RunOptions, dir string, res *Result, live *runGate) (acp.StopReason, error) {
	var choices SessionChoices
	if o.SessionID != "" {
		live.replaying(true)
		r, err := conn.LoadSession(ctx, o.SessionID, dir, nil)
		live.replaying(false)
		if err != nil {
			return "", err
		}
		res.SessionID, choices = o.SessionID, LoadChoices(r)
	} else {
		s, err := conn.NewSession(ctx, dir, nil)
		if err != nil {
			return "", err
		}
		res.SessionID, choices = string(s.SessionId), NewChoices(s)
	}
	if d := conn.agent(); !d.LaunchFlags() {
		if a := o.Request.Agent; a != "" {
			if err := conn.SetMode(ctx, res.SessionID, a, choices); err != nil {
				return "", err
			}
		}
		if m := agent.ModelOf(o.Limits, o.Request); m != "" {
			if err := conn.SetModel(ctx, res.SessionID, m, choices); err != nil {
				return "", err
			}
		}
	}
	live.open(res.SessionID)
	return conn.Prompt(ctx, res.SessionID, []acp.ContentBlock{acp.TextBlock(o.Request.Prompt)})
}

// errTimeout ends a run that used up Limits.Timeout.
var errTimeout = fmt.Errorf("the run hit its timeout: %w", context.DeadlineExceeded)

// errLogin ends a run whose silent agent whoami says is not logged in.
var errLogin = errors.New("the agent waits for a login")

// pausableDeadline calls fire once d has passed, not counting the time it was paused.
type pausableDeadline struct {
	mu        sync.Mutex
	timer     *time.Timer
	remaining time.Duration
	since     time.Time
	paused    int
	fired     bool
}

func newPausableDeadline(d time.Duration, fire func()) *pausableDeadline {
	p := &pausableDeadline{remaining: d, since: time.Now()}
	p.timer = time.AfterFunc(d, func() {
		p.mu.Lock()
		p.fired = true
		p.mu.Unlock()
		fire()
	})
	return p
}

func (p *pausableDeadline) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == 0 && !p.fired && p.timer.Stop() {
		p.remaining -= time.Since(p.since)
	}
	p.paused++
}

func (p *pausableDeadline) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused--
	if p.paused == 0 && !p.fired {
		p.since = time.Now()
		p.timer.Reset(max(p.remaining, 0))
	}
}

func (p *pausableDeadline) stop() { p.timer.Stop() }

// runGate passes the agent's events to a run once it knows its session. Events that come before
// (kiro's first _kiro.dev/metadata may overtake session/new's answer on its way to the caller)
// are held and passed on, in order, when the session is known; those of a session/load's replay
// are history, not this run's, and are dropped.
type runGate struct {
	mu      sync.Mutex
	handle  func(sessionID, sid string, ev agent.Event)
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
	case g.sid != "":
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
	for _, h := range g.pending {
		g.handle(h.sessionID, sid, h.ev)
	}
	g.pending = nil
}
