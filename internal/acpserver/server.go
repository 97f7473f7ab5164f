// Package acpserver is qkit's Agent Client Protocol agent: editors such as Zed and Neovim
// drive Q through it over stdio. It is a thin adapter over the core packages:
//
//   - the adapter (adapter.go) implements the SDK's Agent interface and turns each call into a
//     message;
//   - the session table and the authentication state (server.go) sit behind a mutex, and route
//     messages to sessions without blocking;
//   - each open session is a goroutine (session.go) that owns the session's state, fed through a
//     bounded channel of 32 messages; its prompt turns run in a worker it owns (turn.go), so a
//     session stays responsive to session/cancel while q runs.
//
// Nothing mutable is shared between sessions; prompts in different sessions run in parallel.
// Sessions and their transcripts live in SQLite (internal/sessions), so session/load works after a
// restart. Prompts that go to the agent run through one of two agentTurns: the text path
// (text.go) or the proxy path (internal/acpproxy, reached through passthrough.go).
package acpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/stdiorpc"
)

// inboxSize bounds each session's channel (32, as in Q's own ACP agent).
const inboxSize = 32

// ContextFunc prepends the active profile's context block to prompt for a session in cwd, with the
// files kept within maxTokens. It returns the prompt to send and warnings to log.
type ContextFunc func(cwd string, maxTokens int, prompt string) (string, []string, error)

// Options configure the agent. Everything here is read-only once Serve starts.
type Options struct {
	Store *sessions.Store
	// Limits and the agent profile and default model are passed to every run.
	Limits agent.Limits
	Agent  string
	Model  string
	// Models are offered in the session config option of category "model".
	Models []string
	// LoadModels, when set, gives Models instead, from the agent (its chat --list-models, which
	// may take a while): Serve calls it once in the background, so initialize is answered at once,
	// and what needs the list (session/new's model option, setting the model) waits for it. It
	// must return once ctx ends; Serve waits for it before returning.
	LoadModels func(ctx context.Context) []string
	// MaxTokens is the context budget (context.max_tokens): context files plus earlier turns.
	MaxTokens int
	// Context builds the context block; nil sends prompts without one.
	Context ContextFunc
	// Backend is agent.backend: "acp" or "auto" open new sessions on the proxy path (a session of
	// `<agent> acp`; an agent that does not speak ACP falls back to the text path, with the reason
	// logged); "chat" or "" keep the text path (`<agent> chat --no-interactive`).
	Backend string
	// Commands is the internal-command registry behind slash commands; nil offers none.
	Commands *commands.Registry
	Logger   *slog.Logger
	Version  string
	Now      func() time.Time

	// Login is the terminal login offered to editors that can run one (auth.go); nil offers none.
	Login *TerminalLogin

	// AtEOF is called when the editor closes stdin, before the sessions are cancelled: `acp serve`
	// passes procgroup.Shutdown, so every process it started gets SIGTERM at once rather than
	// the gentle end of a turn. nil (tests that share one process) leaves the stops to the
	// sessions' own cancellation.
	AtEOF func()
}

// MaxLine is the longest JSON-RPC line acp serve reads: the ACP SDK's reader stops at 10 MiB
// (line break included). A longer line is answered with a parse error and skipped; the session
// carries on.
const MaxLine = 10<<20 - 1

// eofGrace is how long the end of stdin waits for requests still being answered (not prompts).
const eofGrace = 5 * time.Second

// Serve runs the agent on in/out (stdin/stdout) until the client disconnects or ctx ends. Before it
// returns, every running prompt is cancelled and its agent process group stopped.
func Serve(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if opts.Store == nil {
		return errors.New("acp serve: no session store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pipe := stdiorpc.New(ctx, in, out, stdiorpc.Options{
		MaxLine:  MaxLine,
		EOFGrace: eofGrace,
		// Running prompts are not waited for: the end of stdin cancels them, as it always did.
		WaitFor: func(method string) bool { return method != acp.AgentMethodSessionPrompt },
		// A request sent without an id is not run: the SDK would run it as a notification, one at
		// a time with the others, so a prompt sent that way held up session/cancel and the
		// answers to permission requests of every session for its whole turn.
		Request: func(method string) bool { return requestMethods[method] },
		Logger:  opts.Logger,
	})
	srv := newServer()
	a := &adapter{opts: opts, srv: srv, pipe: pipe, ctx: ctx}
	if opts.LoadModels != nil {
		loaded := make(chan struct{})
		a.modelsLoaded = loaded
		go func() {
			defer close(loaded)
			a.loadedModels = opts.LoadModels(ctx)
		}()
	}
	a.backend = textTurns{a}
	if opts.Backend == acpclient.BackendACP || opts.Backend == acpclient.BackendAuto {
		a.proxy = newProxy(a)
	}
	// acp-go-sdk starts reading in NewAgentSideConnection, before SetLogger and before a.conn is
	// set, which the handlers use; an input that ends at once raced with both. Its reads wait
	// until the connection is whole.
	whole := make(chan struct{})
	conn := acp.NewAgentSideConnection(a, pipe, heldReader{r: pipe, open: whole})
	conn.SetLogger(opts.Logger)
	a.conn = conn
	close(whole)
	select {
	case <-conn.Done():
		if opts.AtEOF != nil {
			opts.AtEOF()
		}
	case <-ctx.Done():
	}
	cancel() // ends every session; their turns' process groups are stopped
	srv.shutdown()
	if a.proxy != nil {
		a.proxy.Shutdown() // the agent's process group and every bridged MCP server
	}
	if a.modelsLoaded != nil {
		<-a.modelsLoaded // a model list still being fetched is stopped with its process group
	}
	return nil
}

// requestMethods are the ACP methods an agent answers: the SDK's agent methods less the
// notifications (session/cancel, document/did*, nes/accept, nes/reject) and `$/cancel_request`.
// Extension methods (`_…`) may be either and pass as they come; so do methods the SDK does not
// know, which it drops when they come without an id.
var requestMethods = map[string]bool{
	acp.AgentMethodInitialize:             true,
	acp.AgentMethodAuthenticate:           true,
	acp.AgentMethodLogout:                 true,
	acp.AgentMethodSessionNew:             true,
	acp.AgentMethodSessionLoad:            true,
	acp.AgentMethodSessionResume:          true,
	acp.AgentMethodSessionFork:            true,
	acp.AgentMethodSessionList:            true,
	acp.AgentMethodSessionClose:           true,
	acp.AgentMethodSessionPrompt:          true,
	acp.AgentMethodSessionSetMode:         true,
	acp.AgentMethodSessionSetModel:        true,
	acp.AgentMethodSessionSetConfigOption: true,
	acp.AgentMethodNesStart:               true,
	acp.AgentMethodNesSuggest:             true,
	acp.AgentMethodNesClose:               true,
	acp.AgentMethodProvidersList:          true,
	acp.AgentMethodProvidersSet:           true,
	acp.AgentMethodProvidersDisable:       true,
}

// heldReader reads from r once open is closed.
type heldReader struct {
	r    io.Reader
	open <-chan struct{}
}

func (h heldReader) Read(p []byte) (int, error) {
	<-h.open
	return h.r.Read(p)
}

// server is the session table and the authentication state, behind a mutex: nothing it guards
// blocks, so an actor was only a slower lock.
type server struct {
	mu            sync.Mutex
	authenticated bool
	sessions      map[string]*sessionHandle
	down          bool // shutdown began: no session joins the table
}

func newServer() *server {
	return &server{sessions: map[string]*sessionHandle{}}
}

// shutdown waits for every session (each ends on the connection's context, which the caller has
// cancelled) and its workers, so no agent process outlives the server.
func (s *server) shutdown() {
	s.mu.Lock()
	s.down = true
	all := make([]*sessionHandle, 0, len(s.sessions))
	for _, h := range s.sessions {
		all = append(all, h)
	}
	s.mu.Unlock()
	for _, h := range all {
		<-h.done
	}
}

func (s *server) setAuthenticated(ok bool) {
	s.mu.Lock()
	s.authenticated = ok
	s.mu.Unlock()
}

func (s *server) isAuthenticated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authenticated
}

// open returns the live session id, starting its actor with start when it is not open yet. The
// entry leaves the table when the actor ends. After shutdown the actor started is not kept (it
// ends at once, on the cancelled context).
func (s *server) open(id string, start func() *sessionHandle) *sessionHandle {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.sessions[id]; h != nil && !h.ended() {
		return h
	}
	h := start()
	if s.down {
		return h
	}
	s.sessions[id] = h
	go func() {
		<-h.done
		s.mu.Lock()
		if s.sessions[id] == h {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
	}()
	return h
}

// errNotOpen and errBusy are routing failures; the adapter turns them into protocol errors.
var (
	errNotOpen = errors.New("session not open")
	errBusy    = errors.New("session busy")
)

// route delivers msg to the open session id without blocking: a session whose inbox
// (32 messages) is full answers errBusy, the back-pressure the bounded channel exists for.
func (s *server) route(id string, msg sessionMsg) (*sessionHandle, error) {
	s.mu.Lock()
	h := s.sessions[id]
	s.mu.Unlock()
	if h == nil || h.ended() {
		return nil, errNotOpen
	}
	if !h.send(msg) {
		return nil, errBusy
	}
	return h, nil
}
