package acpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/acpproxy"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// On the proxy path (internal/acpproxy) the editor talks, through qkit, to the agent. This file
// is the editor side of it: what the proxy needs of the connection (editorSide), and the editor's
// requests that go to the agent (initialize's capabilities, authenticate, extension methods).

// editorSide is the editor as the proxy sees it (acpproxy.Editor).
type editorSide struct{ a *adapter }

// Send writes the proxy's notification lines after the running turns' (rank 1).
func (e editorSide) Send(lines []byte) error { return e.a.sendLines(1, lines) }

func (e editorSide) Caps() acp.ClientCapabilities { return e.a.clientCaps() }

func (e editorSide) Commands() []acp.AvailableCommand {
	if e.a.opts.Commands == nil {
		return nil
	}
	return e.a.availableCommands()
}

func (e editorSide) Conn() acpproxy.EditorConn { return e.a.conn }

// newProxy is the proxy path of the connection a serves.
func newProxy(a *adapter) *acpproxy.Proxy {
	o := a.opts
	return acpproxy.New(a.ctx, acpproxy.Options{
		Editor: editorSide{a}, Store: o.Store, Limits: o.Limits, Agent: o.Agent, MaxTokens: o.MaxTokens,
		Context: o.Context, Logger: o.Logger, Now: o.Now,
		BlockText: func(b acp.ContentBlock) (string, error) { return PromptText([]acp.ContentBlock{b}) },
	})
}

// proxyTurns runs a session's prompts on the proxy path: the proxy runs the turn, and the
// transcript keeps what it kept of the reply.
type proxyTurns struct{ a *adapter }

func (t proxyTurns) prompt(ctx context.Context, in turnInput, up userPrompt, out *reply) (turnResult, []string) {
	turn, err := t.a.proxy.Prompt(ctx, in.sessionID, in.cwd, up.content)
	out.record(turn.Kept) // the agent's words only: a failure's message goes to the editor alone
	res := turnResult{stop: turn.Stop}
	if err != nil {
		res = t.a.fail(ctx, out.notice, err)
	}
	res.tools, res.usage = sessions.ToolCallsOf(turn.Tools), sessions.UsageOf(turn.Usage)
	res.ended = sessionrec.Ending(acpclient.BackendACP, string(turn.Stop), turn.TimedOut, ctx.Err() != nil, err != nil)
	res.truncated = turn.Truncated
	return res, nil
}

// proxyInitialize completes initialize's answer from the agent behind the proxy
// (acpproxy.Proxy.Advertise). Nothing changes on the text path (no proxy), or for q and kiro-cli
// without a login, which whoami has already said.
func (a *adapter) proxyInitialize(ctx context.Context, resp *acp.InitializeResponse) error {
	d := agent.Describe(a.opts.Limits.Command)
	if a.proxy == nil || d.Builtin() && !a.srv.isAuthenticated() {
		return nil
	}
	return a.proxy.Advertise(ctx, resp)
}

// agentPrompt is what the agent behind the proxy takes in a prompt, once it runs; ok is false
// when no agent runs.
func (a *adapter) agentPrompt() (caps acp.PromptCapabilities, ok bool) {
	if a.proxy == nil {
		return caps, false
	}
	return a.proxy.PromptCapabilities()
}

// agentAuthenticate passes authenticate on to an agent that checks its own login (any other ACP
// agent than q and kiro-cli, whose methods initialize listed); handled is false for qkit's own
// method ("cli"), which Authenticate answers.
func (a *adapter) agentAuthenticate(ctx context.Context, p acp.AuthenticateRequest) (handled bool, err error) {
	d := agent.Describe(a.opts.Limits.Command)
	if a.proxy == nil || d.Builtin() || p.MethodId == "cli" {
		return false, nil
	}
	if err := a.proxy.Authenticate(ctx, p); err != nil {
		return true, err
	}
	a.srv.setAuthenticated(true)
	return true, nil
}

// agentAuthRequired is the auth-required answer for an agent that checks its own login: what it
// needs, in its own words (its methods), not q's or kiro's.
func (a *adapter) agentAuthRequired(d agent.Description) error {
	var ids []string
	if a.proxy != nil {
		ids = a.proxy.AuthMethodIDs()
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
	if a.proxy == nil {
		return nil, acp.NewMethodNotFound(method)
	}
	return a.proxy.Extension(ctx, method, params, notification)
}

// agentRefusal is the agent refusing what the editor asked of it through qkit (a model): the
// editor gets the agent's own error.
type agentRefusal struct{ err error }

func (e *agentRefusal) Error() string { return e.err.Error() }
func (e *agentRefusal) Unwrap() error { return e.err }
