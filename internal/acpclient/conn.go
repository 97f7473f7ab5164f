// Package acpclient drives an agent that speaks the Agent Client Protocol (`kiro-cli acp`, or any
// ACP agent) as its client, on github.com/coder/acp-go-sdk's client side.
//
// Start runs `<command> acp [flags]` in its own process group and initializes it; a Conn then
// opens or loads sessions, prompts, cancels, and is Closed, which stops the whole process group
// (stdin closed, then SIGTERM and SIGKILL after a grace, as the text runner does). Every
// session/update reaches the caller in order, as typed agent.Event values (OnEvent) and as the
// agent sent it (OnNotification, for a proxy that forwards it). The agent's requests
// (session/request_permission, fs/*, terminal/*) are answered by the handlers in Options; fs and
// terminal capabilities are advertised only when their handler is set. Run is the one-shot form
// that `qkit ask` uses: the text runner's timeout, size cap and cancellation, over ACP.
//
// The agent's stdout goes through a reader of this package before the SDK sees it: notifications
// are decoded and delivered there, one at a time, so a slow caller slows the agent down (the SDK
// queues notifications without back-pressure and closes the connection past 1024), malformed JSON
// ends the connection with an error naming it (the SDK would skip the line silently), and kiro's
// `_kiro.dev/*` notifications are handled without errors. Only requests and responses reach the SDK.
package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/procgroup"
)

// Options say how to start the agent and how to answer it.
type Options struct {
	// Command is the program to run; Args follow it (see Argv).
	Command string
	Args    []string
	// Agent describes the agent (agent.Describe of agent.command): its name in messages and how
	// it says it is not logged in. Empty: the description of Command.
	Agent agent.Description
	// Dir is the agent's working directory; empty means the caller's.
	Dir string
	// Env is the agent's environment; nil means the caller's.
	Env []string
	// Logger receives the connection's log lines; nil discards them.
	Logger *slog.Logger
	// Grace is how long the agent has to exit after its stdin closes, and then between SIGTERM
	// and SIGKILL; 0 means 2 seconds.
	Grace time.Duration
	// LoadTimeout bounds session/load (kiro may hang on an unknown session); 0 means 30 seconds.
	LoadTimeout time.Duration
	// ClientVersion is qkit's version, sent in initialize; empty means "dev".
	ClientVersion string

	// OnEvent receives every session update as typed events, in order, one call at a time,
	// together with the session it belongs to; usage from `_kiro.dev/metadata` comes the same
	// way. It may block: the agent is slowed down, nothing is dropped.
	OnEvent func(sessionID string, ev agent.Event)
	// OnNotification receives every notification the agent sends (session/update and the
	// `_`-prefixed extensions) as it was sent, before OnEvent. params must not be kept.
	OnNotification func(method string, params json.RawMessage)
	// Permission decides the agent's session/request_permission; nil rejects every request.
	Permission PermissionFunc
	// Files serves fs/read_text_file and fs/write_text_file; nil does not advertise them.
	Files Files
	// Terminals serves terminal/*; nil does not advertise them.
	Terminals Terminals
	// Access decides each write (fs/write_text_file) and command (terminal/create) before Files
	// or Terminals serve it, with the tool call of this turn whose permission covers it, if any;
	// nil serves every one (a proxy whose editor decides). Reads are not asked about.
	Access AccessFunc
	// Extension answers the agent's `_`-prefixed requests; nil answers method-not-found.
	Extension func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// PermissionFunc decides a permission request. An error ends the turn: the request is answered
// cancelled, the session is cancelled, and Prompt returns the error.
type PermissionFunc func(ctx context.Context, req PermissionRequest) (Decision, error)

// PermissionRequest is the agent asking to run a tool.
type PermissionRequest struct {
	SessionID string
	// Tool is the call, with what earlier tool_call updates said about it (title, kind,
	// locations, diffs) merged in.
	Tool agent.ToolCall
	// Options are the answers the agent offers.
	Options []agent.PermissionOption
	// Raw is the request as the agent sent it.
	Raw acp.RequestPermissionRequest
}

// Decision answers a permission request.
type Decision struct {
	// OptionID is the chosen option; it must be one of the request's. Empty with Cancelled.
	OptionID string
	// Cancelled answers "cancelled" (kiro then cancels its whole turn).
	Cancelled bool
	// By says who decided: "policy", "person" or "client" (agent.Permission.DecidedBy).
	By string
}

// Files serves the agent's file requests.
type Files interface {
	ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error)
}

// Terminals serves the agent's terminal requests.
type Terminals interface {
	CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error)
}

// Conn is a running agent, initialized.
type Conn struct {
	o    Options
	log  *slog.Logger
	argv []string
	proc *procgroup.Proc
	csc  *acp.ClientSideConnection

	stdin  io.WriteCloser
	stderr *agent.TailBuffer

	// life ends the SDK calls in flight when the connection is closed.
	life     context.Context
	lifeStop context.CancelFunc

	readDone, errDone chan struct{} // closed when the readers of its stdout and stderr return

	dead    chan struct{} // closed when the agent can no longer answer (deadErr is set)
	deadErr error

	closeOnce   sync.Once
	stdinFailed atomic.Bool // a write to the agent failed: it is gone, or going
	dieOnce     sync.Once
	emitMu      sync.Mutex // OnEvent is called by the reader and by permission requests, one at a time

	mu     sync.Mutex
	turns  map[string]*turn
	tools  map[string]agent.ToolCall // what each tool call said so far, by id
	grants map[string][]grantedCall  // the tool calls allowed in each session's turn, in order

	init acp.InitializeResponse
}

// stderrKeep is how much of the agent's stderr is kept (its end, where errors are).
const stderrKeep = 64 << 10

// Start starts the agent and initializes it. ctx bounds the start-up only. An agent that exits
// or writes something other than JSON-RPC before answering initialize does not speak ACP: the
// error says so, with its exit status and stderr. An agent that answers it is not logged in
// (kiro's kiro-login auth method) while its environment has no headless credential is stopped at
// once with an *agent.LoginError: it would wait forever for a login.
func Start(ctx context.Context, o Options) (*Conn, error) {
	c := &Conn{
		o: o, log: o.Logger, argv: append([]string{o.Command}, o.Args...),
		stderr:   agent.NewTailBuffer(stderrKeep),
		readDone: make(chan struct{}), errDone: make(chan struct{}),
		dead: make(chan struct{}), turns: map[string]*turn{}, tools: map[string]agent.ToolCall{}, grants: map[string][]grantedCall{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.o.Grace <= 0 {
		c.o.Grace = 2 * time.Second
	}
	if c.o.LoadTimeout <= 0 {
		c.o.LoadTimeout = 30 * time.Second
	}
	if c.o.ClientVersion == "" {
		c.o.ClientVersion = "dev"
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	if err := c.initialize(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.loginRequired(); err != nil {
		c.log.Info("the ACP agent is not logged in", "error", err)
		c.Close()
		return nil, err
	}
	return c, nil
}

// loginRequired is the *agent.LoginError of an agent that said in initialize it has no login
// (agent.Description.LoginMethod: kiro's kiro-login, which has no authenticate handler: the login
// happens in a terminal) and has no headless credential (agent.HeadlessLogin, in the agent's
// environment) either: without one, kiro waits forever for a device login once a session or a
// prompt needs it.
func (c *Conn) loginRequired() error {
	method := c.agent().LoginMethod()
	for _, m := range c.init.AuthMethods {
		if method == "" || m.Agent == nil || m.Agent.Id != method {
			continue
		}
		if _, ok := agent.HeadlessLogin(agent.EnvLookup(c.o.Env)); ok {
			return nil
		}
		return &agent.LoginError{Command: c.agent().Command, Detail: fmt.Sprintf("%s acp answered initialize with its %s method, and KIRO_API_KEY is not set", c.name(), method)}
	}
	return nil
}

// name is what messages call the agent (agent.Description.Name).
func (c *Conn) name() string { return c.agent().Name() }

func (c *Conn) start() error {
	if strings.TrimSpace(c.o.Command) == "" {
		return fmt.Errorf("agent.command is empty: set it with qkit settings set agent.command kiro-cli")
	}
	c.life, c.lifeStop = context.WithCancel(context.Background())
	sdkR, sdkW := io.Pipe()
	whole := make(chan struct{}) // the stdout reader waits for the Conn it fills in to be whole
	c.log.Info("starting ACP agent", "command", c.o.Command, "dir", c.o.Dir)
	c.log.Debug("agent command line", "argv", c.argv)
	proc, err := procgroup.Start(c.o.Command, c.o.Args, procgroup.Options{
		Dir:       c.o.Dir,
		Env:       c.o.Env,
		StdinPipe: true,
		Stdout: func(out io.Reader) {
			defer close(c.readDone)
			<-whole
			err := route(out, sdkW, c.notify)
			c.die(err)
			sdkW.Close() // after dead is set: a call the SDK fails for it finds deadErr
		},
		Stderr: func(errOut io.Reader) {
			defer close(c.errDone)
			procgroup.Copy(c.stderr)(errOut)
		},
		Grace: c.o.Grace,
	})
	if err != nil {
		c.lifeStop()
		return agent.StartError(c.agent().Command, err)
	}
	c.proc, c.stdin = proc, proc.Stdin()
	go c.watchExit()
	c.csc = acp.NewClientSideConnection(&client{c: c}, &stdinWriter{w: c.stdin, failed: &c.stdinFailed}, sdkR)
	c.csc.SetLogger(c.log)
	close(whole)
	return nil
}

// die records why the agent can no longer answer: err from the reader (malformed JSON, a line too
// long), or, at the end of its stdout (err nil), its exit. The first reason stays.
func (c *Conn) die(err error) {
	c.dieOnce.Do(func() {
		if err == nil {
			err = c.exitReason()
		}
		c.mu.Lock()
		c.deadErr = err
		c.mu.Unlock()
		close(c.dead)
		c.log.Info("ACP agent connection ended", "reason", err)
	})
}

// exitReason waits (a grace at most) for the agent to exit and says how it did, with its stderr.
func (c *Conn) exitReason() error {
	t := time.NewTimer(c.o.Grace)
	defer t.Stop()
	select {
	case <-c.proc.Exited():
		select { // stderr's last words, unless a child it left still holds the pipe
		case <-c.errDone:
		case <-time.After(exitDrain):
		}
		return fmt.Errorf("%s %s%s", c.o.Command, c.proc.Status().Ended(), agent.StderrSuffix(c.stderr.String()))
	case <-t.C:
		return fmt.Errorf("%s closed its stdout%s", c.o.Command, agent.StderrSuffix(c.stderr.String()))
	}
}

// exitDrain is how long the rest of the agent's output may take to read once it has exited.
const exitDrain = 250 * time.Millisecond

// watchExit ends the connection when the agent exits, even if a child it left behind still holds
// its stdout open: what the agent wrote before exiting is read first (a grace at most).
func (c *Conn) watchExit() {
	<-c.proc.Exited()
	t := time.NewTimer(exitDrain)
	defer t.Stop()
	select {
	case <-c.readDone:
	case <-t.C:
		c.die(nil)
	}
}

// Dead is closed when the agent can no longer answer: it exited, closed its stdout or sent
// something that is not JSON-RPC. Err then says why.
func (c *Conn) Dead() <-chan struct{} { return c.dead }

// Err says why the connection ended; nil while it is alive.
func (c *Conn) Err() error {
	select {
	case <-c.dead:
		return c.deadErr
	default:
		return nil
	}
}

// Argv is the command line that was run.
func (c *Conn) Argv() []string { return c.argv }

// Info is the agent's answer to initialize.
func (c *Conn) Info() acp.InitializeResponse { return c.init }

// Stderr is the end of the agent's stderr so far (its last 64 KiB).
func (c *Conn) Stderr() string { return c.stderr.String() }

// ExitCode is the agent's exit status once it has exited (after Close), -1 if a signal ended it
// or it has not exited.
func (c *Conn) ExitCode() int {
	return c.proc.Status().Code
}

// SDK returns the SDK's connection, for the calls Conn does not wrap (session/set_mode,
// extension methods). Its calls do not end when the agent dies: race them against Dead.
func (c *Conn) SDK() *acp.ClientSideConnection { return c.csc }

// ClientName is what qkit calls itself in initialize.
const ClientName = "qkit"

func (c *Conn) initialize(ctx context.Context) error {
	caps := acp.ClientCapabilities{Terminal: c.o.Terminals != nil}
	if c.o.Files != nil {
		caps.Fs = acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}
	}
	resp, err := call(c, ctx, func(ctx context.Context) (acp.InitializeResponse, error) {
		return c.csc.Initialize(ctx, acp.InitializeRequest{
			ProtocolVersion:    acp.ProtocolVersionNumber,
			ClientCapabilities: caps,
			ClientInfo:         &acp.Implementation{Name: ClientName, Version: c.o.ClientVersion},
		})
	})
	if err != nil {
		if errors.Is(err, errDead) {
			return c.notACP(c.Err())
		}
		return fmt.Errorf("initialize: %w", err)
	}
	c.init = resp
	c.log.Info("ACP agent initialized", "protocol", resp.ProtocolVersion, "agent", agentName(resp))
	return nil
}

func agentName(r acp.InitializeResponse) string {
	if r.AgentInfo == nil {
		return ""
	}
	return r.AgentInfo.Name + " " + r.AgentInfo.Version
}

// errDead marks a call that failed because the agent died; call returns it wrapped with deadErr.
var errDead = errors.New("the agent is gone")

// call runs an SDK request, returning when it answers, ctx ends or the agent dies (whichever is
// first). The request itself runs under the connection's life, so a ctx that ends leaves it to
// the caller to cancel the work on the agent's side.
func call[T any](c *Conn, ctx context.Context, do func(ctx context.Context) (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := do(c.life)
		done <- answer{v, err}
	}()
	var zero T
	select {
	case a := <-done:
		if a.err != nil {
			if c.gone() {
				return zero, fmt.Errorf("%w: %w", errDead, c.Err())
			}
			return zero, agentError(a.err)
		}
		return a.v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-c.dead:
		return zero, fmt.Errorf("%w: %w", errDead, c.Err())
	}
}

// gone reports whether the agent has died, waiting (a grace at most) for the reason when a write
// to it failed: the SDK reports a failed write as its own internal error.
func (c *Conn) gone() bool {
	if c.stdinFailed.Load() {
		t := time.NewTimer(c.o.Grace)
		defer t.Stop()
		select {
		case <-c.dead:
		case <-t.C:
		}
	}
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// stdinWriter notes a failed write to the agent.
type stdinWriter struct {
	w      io.Writer
	failed *atomic.Bool
}

func (s *stdinWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		s.failed.Store(true)
	}
	return n, err
}

// Close stops the agent: its stdin is closed (an ACP agent exits at the end of its input), then,
// if it has not exited after the grace, its process group gets SIGTERM and then SIGKILL; what is
// left of the group afterwards is ended too (internal/procgroup). Close returns when the agent and
// the readers of its output are gone. It is safe to call more than once.
//
// When qkit itself is stopping (procgroup.Shutdown), the agent has had SIGTERM already and its
// stdin is not closed first: Close waits for the group's end (SIGKILL after
// procgroup.ShutdownGrace), and the pipe closes after.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.lifeStop()
		if c.proc.Stopping() {
			c.proc.Stop()
			exit := c.proc.Wait(context.Background())
			c.log.Info("ACP agent stopped: qkit is stopping", "exit_code", exit.Code, "signal", exit.Signal)
			return
		}
		_ = c.stdin.Close()
		t := time.NewTimer(c.o.Grace)
		select {
		case <-c.proc.Exited():
			t.Stop()
		case <-t.C:
			c.log.Warn("stopping ACP agent", "pgid", c.proc.Pid())
			c.proc.Stop()
		}
		exit := c.proc.Wait(context.Background())
		c.log.Info("ACP agent stopped", "exit_code", exit.Code, "signal", exit.Signal)
	})
}
