package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
)

// On the proxy path the editor talks, through qkit, to the agent: what the agent supports is what
// initialize advertises (its MCP transports and prompt content), an agent that checks its own
// login (any other ACP agent than q and kiro-cli) offers its own auth methods and authenticates
// them itself, and the `_`-prefixed extension methods pass through both ways.

// proxyInitialize completes initialize's answer from the agent behind the proxy, which it starts:
// its mcpCapabilities (so an editor that follows the spec sends HTTP or SSE servers only when the
// agent takes them) and its promptCapabilities (image, audio; embedded context qkit can always
// take: for an agent without it, qkit passes embedded resources on as text). An agent that
// checks its own login lists its own auth methods. Nothing changes on the text path (no proxy,
// an agent that does not speak ACP, or q and kiro-cli without a login, which whoami has already
// said); an agent that cannot start is left for the first session to report, unless it is
// another ACP agent, which has no text path to fall back on.
func (a *adapter) proxyInitialize(ctx context.Context, resp *acp.InitializeResponse) error {
	d := agent.Describe(a.opts.Limits.Command)
	if a.proxy == nil || d.Builtin() && !a.srv.authenticated() {
		return nil
	}
	c, err := a.proxy.current(ctx)
	switch {
	case errors.Is(err, errNotACP) && d.Builtin():
		return nil
	case err != nil && d.Builtin():
		a.opts.Logger.Info("the agent did not start for initialize; the first session will say why", "err", err)
		return nil
	case err != nil:
		return internalError(fmt.Errorf("%s: %w", d.Name(), err))
	}
	info := c.Info()
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

// agentPrompt is what the agent behind the proxy takes in a prompt, once it runs; ok is false
// when no agent runs.
func (a *adapter) agentPrompt() (caps acp.PromptCapabilities, ok bool) {
	if a.proxy == nil {
		return caps, false
	}
	a.proxy.mu.Lock()
	c := a.proxy.conn
	a.proxy.mu.Unlock()
	if c == nil {
		return caps, false
	}
	return c.Info().AgentCapabilities.PromptCapabilities, true
}

// agentAuthenticate passes authenticate on to an agent that checks its own login (any other ACP
// agent than q and kiro-cli, whose methods initialize listed); handled is false for qkit's own
// method ("cli"), which Authenticate answers.
func (a *adapter) agentAuthenticate(ctx context.Context, p acp.AuthenticateRequest) (handled bool, err error) {
	d := agent.Describe(a.opts.Limits.Command)
	if a.proxy == nil || d.Builtin() || p.MethodId == "cli" {
		return false, nil
	}
	c, err := a.proxy.current(ctx)
	if err != nil {
		return true, internalError(fmt.Errorf("%s: %w", d.Name(), err))
	}
	if _, err := agentCall(ctx, c, func(ctx context.Context) (acp.AuthenticateResponse, error) {
		return c.SDK().Authenticate(ctx, p)
	}); err != nil {
		return true, agentRequestError(err)
	}
	a.srv.setAuthenticated(true)
	return true, nil
}

// agentAuthRequired is the auth-required answer for an agent that checks its own login: what it
// needs, in its own words (its methods), not q's or kiro's.
func (a *adapter) agentAuthRequired(d agent.Description) error {
	var ids []string
	if a.proxy != nil {
		a.proxy.mu.Lock()
		c := a.proxy.conn
		a.proxy.mu.Unlock()
		if c != nil {
			for _, m := range c.Info().AuthMethods {
				switch {
				case m.Agent != nil:
					ids = append(ids, m.Agent.Id)
				case m.EnvVar != nil:
					ids = append(ids, m.EnvVar.Id)
				case m.Terminal != nil:
					ids = append(ids, m.Terminal.Id)
				}
			}
		}
	}
	msg := "Authentication required: " + d.Name() + " needs a login"
	if len(ids) > 0 {
		msg += fmt.Sprintf(": authenticate with one of its methods (%s), as initialize listed them", strings.Join(ids, ", "))
	} else {
		msg += ": " + d.LoginHint()
	}
	return &acp.RequestError{Code: acpclient.CodeAuthRequired, Message: msg}
}

// HandleExtensionMethod passes the editor's `_`-prefixed requests and notifications to the agent
// behind the proxy, and its answer back. Without one (the text path) they are unknown methods.
// The SDK hands both to this one handler; a request is the one stdin still awaits an answer to.
func (a *adapter) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	notification := !a.pipe.Awaiting(method)
	if a.proxy == nil || !a.proxy.available(ctx) {
		return nil, acp.NewMethodNotFound(method)
	}
	c, err := a.proxy.current(ctx)
	if err != nil {
		return nil, internalError(err)
	}
	params = a.proxy.toAgentIDs(params)
	if notification {
		return nil, c.SDK().NotifyExtension(ctx, method, params)
	}
	out, err := agentCall(ctx, c, func(ctx context.Context) (json.RawMessage, error) {
		return c.SDK().CallExtension(ctx, method, params)
	})
	if err != nil {
		return nil, agentRequestError(err)
	}
	return a.proxy.toEditorIDs(out), nil
}

// extension passes the agent's `_`-prefixed requests to the editor (acpclient.Options.Extension),
// under qkit's session ids.
func (p *proxy) extension(ctx context.Context, method string, params json.RawMessage) (any, error) {
	out, err := p.a.conn.CallExtension(ctx, method, p.toEditorIDs(params))
	if err != nil {
		return nil, err
	}
	return p.toAgentIDs(out), nil
}

// extensionNote passes on an extension notification of the agent's that names no session (one
// that does is delivered with the session's updates).
func (p *proxy) extensionNote(method string, params json.RawMessage) {
	line := append([]byte(`{"jsonrpc":"2.0","method":`), appendJSONString(nil, method)...)
	if len(params) > 0 {
		line = append(append(line, `,"params":`...), params...)
	}
	line = append(line, "}\n"...)
	if err := p.a.sendLines(1, line); err != nil {
		p.a.opts.Logger.Debug("extension notification not forwarded", "method", method, "err", err)
	}
}

// toAgentIDs puts the agent's session id in place of qkit's in an extension's params, when they
// name a session qkit proxies.
func (p *proxy) toAgentIDs(params json.RawMessage) json.RawMessage {
	if id := sessionIDOf(params); id != "" {
		if s := p.session(id); s != nil {
			s.mu.Lock()
			agentID := s.agentID
			s.mu.Unlock()
			return replaceSessionID(params, id, agentID)
		}
	}
	return params
}

// toEditorIDs puts qkit's session id in place of the agent's.
func (p *proxy) toEditorIDs(params json.RawMessage) json.RawMessage {
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

// agentRequestError is the editor's error for an agent's refusal: its own code and message when
// it gave one, an internal error otherwise.
func agentRequestError(err error) error {
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

// agentRefusal is the agent refusing what the editor asked of it through qkit (a model): the
// editor gets the agent's own error.
type agentRefusal struct{ err error }

func (e *agentRefusal) Error() string { return e.err.Error() }
func (e *agentRefusal) Unwrap() error { return e.err }
