// Package mcpbridge offers stdio MCP servers to an agent that reaches MCP servers only over HTTP:
// kiro-cli's ACP agent ignores the stdio servers an editor gives in session/new. qkit starts each
// server itself and serves its tools on a loopback streamable-HTTP endpoint that only a request
// carrying the session's secret may use; the servers stop when the session closes.
package mcpbridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/procgroup"
)

// Server is a stdio MCP server as an editor describes it.
type Server struct {
	Name    string
	Command string
	Args    []string
	// Env holds NAME=value pairs added to qkit's environment.
	Env []string
}

// Endpoint is how the agent reaches a bridged server: an HTTP MCP server entry for session/new.
type Endpoint struct {
	Name string
	URL  string
	// Header is the name and value the agent must send with every request.
	Header [2]string
}

// Bridge serves the bridged servers of every session of one process on one loopback port, started
// with the first session that needs it.
type Bridge struct {
	log *slog.Logger

	mu     sync.Mutex
	srv    *http.Server
	addr   string
	routes map[string]*route // by path
}

// route is one bridged server of one session.
type route struct {
	secret  string
	handler http.Handler
}

// New returns a bridge; log receives a warning for each server that cannot be bridged.
func New(log *slog.Logger) *Bridge {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{log: log, routes: map[string]*route{}}
}

// startTimeout bounds a server's start-up (its process and the MCP handshake).
const startTimeout = 30 * time.Second

// Session is the bridged servers of one session.
type Session struct {
	// Endpoints are the servers that started, in the order given.
	Endpoints []Endpoint
	b         *Bridge
	paths     []string
	clients   []*mcp.ClientSession
	procs     []*procgroup.Proc
	once      sync.Once
}

// Open starts servers in dir and serves each on the bridge. A server that cannot start is left
// out with a warning (the session goes on without it); the error is for the bridge itself.
func (b *Bridge) Open(ctx context.Context, dir string, servers []Server) (*Session, error) {
	s := &Session{b: b}
	if len(servers) == 0 {
		return s, nil
	}
	addr, err := b.listen()
	if err != nil {
		return nil, err
	}
	secret := token()
	for _, sv := range servers {
		cs, proc, err := start(ctx, dir, sv)
		if err != nil {
			b.log.Warn("MCP server not bridged: it did not start", "server", sv.Name, "command", sv.Command, "err", err)
			continue
		}
		mirror, err := mirrorTools(ctx, sv.Name, cs)
		if err != nil {
			b.log.Warn("MCP server not bridged: its tools could not be listed", "server", sv.Name, "err", err)
			_ = cs.Close()
			stop(proc)
			continue
		}
		path := "/mcp/" + token()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mirror }, &mcp.StreamableHTTPOptions{Logger: b.log})
		b.mu.Lock()
		b.routes[path] = &route{secret: secret, handler: h}
		b.mu.Unlock()
		s.paths = append(s.paths, path)
		s.clients = append(s.clients, cs)
		s.procs = append(s.procs, proc)
		s.Endpoints = append(s.Endpoints, Endpoint{Name: sv.Name, URL: "http://" + addr + path, Header: [2]string{"Authorization", "Bearer " + secret}})
	}
	return s, nil
}

// Close stops the session's servers (each process group) and their endpoints.
func (s *Session) Close() {
	s.once.Do(func() {
		s.b.mu.Lock()
		for _, p := range s.paths {
			delete(s.b.routes, p)
		}
		s.b.mu.Unlock()
		var wg sync.WaitGroup
		for i, cs := range s.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = cs.Close()
				stop(s.procs[i])
			}()
		}
		wg.Wait()
	})
}

// Close stops the HTTP endpoint (the sessions are closed by their owners).
func (b *Bridge) Close() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// listen starts the loopback HTTP server once, and returns its address.
func (b *Bridge) listen() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		return b.addr, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("MCP bridge: %w", err)
	}
	b.addr = ln.Addr().String()
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := b.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Warn("MCP bridge stopped", "err", err)
		}
	}()
	return b.addr, nil
}

// serve routes a request to its bridged server when it carries that session's secret.
func (b *Bridge) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	rt := b.routes[r.URL.Path]
	b.mu.Unlock()
	if rt == nil {
		http.NotFound(w, r)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(rt.secret)) != 1 {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "this MCP endpoint needs the session's bearer token", http.StatusUnauthorized)
		return
	}
	rt.handler.ServeHTTP(w, r)
}

// start runs one server, in a process group of its own, and connects to it.
func start(ctx context.Context, dir string, sv Server) (*mcp.ClientSession, *procgroup.Proc, error) {
	if strings.TrimSpace(sv.Command) == "" {
		return nil, nil, errors.New("no command")
	}
	fromServer, toClient := io.Pipe()
	proc, err := procgroup.Start(sv.Command, sv.Args, procgroup.Options{
		Dir:       dir,
		Env:       append(os.Environ(), sv.Env...),
		StdinPipe: true,
		// Its stdout goes to the MCP client; its stderr (the server's log) is not qkit's protocol
		// stream, and goes nowhere.
		Stdout: func(r io.Reader) {
			procgroup.Copy(toClient)(r)
			_ = toClient.Close()
		},
	})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "qkit-mcp-bridge", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: fromServer, Writer: proc.Stdin()}, nil)
	if err != nil {
		_ = fromServer.Close()
		stop(proc)
		return nil, nil, err
	}
	return cs, proc, nil
}

// stopGrace is how long a server has to exit once its stdin is closed, before its group gets
// SIGTERM (and SIGKILL after as long again).
const stopGrace = 2 * time.Second

// stop ends a server as the MCP spec asks of a stdio client: its stdin is closed, and if it has
// not exited after a grace, its process group is stopped; what it left of the group goes too.
func stop(proc *procgroup.Proc) {
	_ = proc.Stdin().Close()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	proc.Wait(ctx)
}

// mirrorTools builds a server offering the tools of cs, each call forwarded to it.
func mirrorTools(ctx context.Context, name string, cs *mcp.ClientSession) (*mcp.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "qkit-bridge"}, nil)
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if err := addTool(srv, tool, cs); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// addTool adds one forwarded tool; a tool the SDK refuses (an input schema that is not an object)
// is an error rather than a panic.
func addTool(srv *mcp.Server, tool *mcp.Tool, cs *mcp.ClientSession) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %q: %v", tool.Name, r)
		}
	}()
	name := tool.Name
	srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
	})
	return nil
}

func token() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
