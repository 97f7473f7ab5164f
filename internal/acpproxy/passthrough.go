package acpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/stdiorpc"
)

// The editor talks, through qkit, to the agent: what the agent supports is what initialize
// advertises (its MCP transports and prompt content), an agent that checks its own login (any
// other ACP agent than q and kiro-cli) offers its own auth methods and authenticates them itself,
// and the `_`-prefixed extension methods pass through both ways.

// Advertise completes initialize's answer from the agent: what the running agent said, else what
// it said last time (acpclient.LearnedInitialize: the same command line and binary), else what it
// says when started now: its mcpCapabilities
// (so an editor that follows the spec sends HTTP or SSE servers only when the agent takes them)
// and its promptCapabilities (image, audio; embedded context qkit can always take: for an agent
// without it, qkit passes embedded resources on as text). An agent that checks its own login
// lists its own auth methods. Nothing changes when the agent does not speak ACP; q or kiro-cli
// that cannot start is left for the first session to report, while another ACP agent, which has
// no text path to fall back on, fails initialize.
func (p *Proxy) Advertise(ctx context.Context, resp *acp.InitializeResponse) error {
	d := agent.Describe(p.o.Limits.Command)
	info, ok := p.learned()
	if !ok {
		c, err := p.current(ctx)
		switch {
		case errors.Is(err, errNotACP) && d.Builtin():
			return nil
		case err != nil && d.Builtin():
			p.o.Logger.Info("the agent did not start for initialize; the first session will say why", "err", err)
			return nil
		case err != nil:
			return internalError(fmt.Errorf("%s: %w", d.Name(), err))
		}
		info = c.Info()
	}
	resp.AgentCapabilities.McpCapabilities = info.AgentCapabilities.McpCapabilities
	resp.AgentCapabilities.PromptCapabilities.Image = info.AgentCapabilities.PromptCapabilities.Image
	resp.AgentCapabilities.PromptCapabilities.Audio = info.AgentCapabilities.PromptCapabilities.Audio
	if !d.Builtin() {
		resp.AuthMethods = info.AuthMethods
		if resp.AuthMethods == nil {
			resp.AuthMethods = []acp.AuthMethod{}
		}
	}
	return nil
}

// PromptCapabilities is what the agent takes in a prompt, once it runs; ok is false when no agent
// runs.
func (p *Proxy) PromptCapabilities() (caps acp.PromptCapabilities, ok bool) {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		return caps, false
	}
	return c.Info().AgentCapabilities.PromptCapabilities, true
}

// Authenticate passes authenticate on to an agent that checks its own login (one of the methods
// its initialize listed); the error is the editor's answer.
func (p *Proxy) Authenticate(ctx context.Context, req acp.AuthenticateRequest) error {
	c, err := p.current(ctx)
	if err != nil {
		return internalError(fmt.Errorf("%s: %w", agent.Describe(p.o.Limits.Command).Name(), err))
	}
	if _, err := agentCall(ctx, c, func(ctx context.Context) (acp.AuthenticateResponse, error) {
		return c.SDK().Authenticate(ctx, req)
	}); err != nil {
		return RequestError(err)
	}
	return nil
}

// AuthMethodIDs are the ids of the auth methods the agent listed (running, or as learned).
func (p *Proxy) AuthMethodIDs() []string {
	info, ok := p.learned()
	if !ok {
		return nil
	}
	var ids []string
	for _, m := range info.AuthMethods {
		switch {
		case m.Agent != nil:
			ids = append(ids, m.Agent.Id)
		case m.EnvVar != nil:
			ids = append(ids, m.EnvVar.Id)
		case m.Terminal != nil:
			ids = append(ids, m.Terminal.Id)
		}
	}
	return ids
}

// Extension passes the editor's `_`-prefixed request (or, notification set, notification) to the
// agent, and its answer back. Without an ACP agent it is an unknown method.
func (p *Proxy) Extension(ctx context.Context, method string, params json.RawMessage, notification bool) (any, error) {
	if !p.Available(ctx) {
		return nil, acp.NewMethodNotFound(method)
	}
	c, err := p.current(ctx)
	if err != nil {
		return nil, internalError(err)
	}
	params = p.toAgentIDs(params)
	if notification {
		return nil, c.SDK().NotifyExtension(ctx, method, params)
	}
	out, err := agentCall(ctx, c, func(ctx context.Context) (json.RawMessage, error) {
		return c.SDK().CallExtension(ctx, method, params)
	})
	if err != nil {
		return nil, RequestError(err)
	}
	return p.toEditorIDs(out), nil
}

// extension passes the agent's `_`-prefixed requests to the editor (acpclient.Options.Extension),
// under qkit's session ids.
func (p *Proxy) extension(ctx context.Context, method string, params json.RawMessage) (any, error) {
	out, err := p.o.Editor.Conn().CallExtension(ctx, method, p.toEditorIDs(params))
	if err != nil {
		return nil, err
	}
	return p.toAgentIDs(out), nil
}

// extensionNote passes on an extension notification of the agent's that names no session (one
// that does is delivered with the session's updates).
func (p *Proxy) extensionNote(method string, params json.RawMessage) {
	line := append([]byte(`{"jsonrpc":"2.0","method":`), stdiorpc.AppendJSONString(nil, method)...)
	if len(params) > 0 {
		line = append(append(line, `,"params":`...), params...)
	}
	line = append(line, "}\n"...)
	if err := p.o.Editor.Send(line); err != nil {
		p.o.Logger.Debug("extension notification not forwarded", "method", method, "err", err)
	}
}

// toAgentIDs puts the agent's session id in place of qkit's in an extension's params, when they
// name a session qkit proxies.
func (p *Proxy) toAgentIDs(params json.RawMessage) json.RawMessage {
	if id := sessionIDOf(params); id != "" {
		if s := p.Session(id); s != nil {
			s.mu.Lock()
			agentID := s.agentID
			s.mu.Unlock()
			return replaceSessionID(params, id, agentID)
		}
	}
	return params
}

// toEditorIDs puts qkit's session id in place of the agent's.
func (p *Proxy) toEditorIDs(params json.RawMessage) json.RawMessage {
	if id := sessionIDOf(params); id != "" {
		if s := p.byAgentID(id); s != nil {
			return replaceSessionID(params, id, s.id)
		}
	}
	return params
}

// agentCall runs one request to the agent, ending when ctx does or the agent dies.
func agentCall[T any](ctx context.Context, c *acpclient.Conn, do func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.Dead():
			cancel()
		case <-ctx.Done():
		}
	}()
	v, err := do(ctx)
	if err != nil && c.Err() != nil {
		return v, fmt.Errorf("the agent ended: %w", c.Err())
	}
	return v, err
}

// RequestError is the editor's error for an agent's refusal: its own code and message when it
// gave one, an internal error otherwise.
func RequestError(err error) error {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return re
	}
	var ae *acpclient.AgentError
	if errors.As(err, &ae) {
		return &acp.RequestError{Code: ae.Code, Message: err.Error()}
	}
	return internalError(err)
}

func internalError(err error) error {
	return &acp.RequestError{Code: -32603, Message: err.Error()}
}
