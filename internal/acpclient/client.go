package acpclient

import (
	"context"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// client answers the agent's requests for a Conn (acp.Client, and extension methods).
type client struct{ c *Conn }

var (
	_ acp.Client                 = (*client)(nil)
	_ acp.ExtensionMethodHandler = (*client)(nil)
)

// SessionUpdate is not reached (route delivers notifications itself) but is part of acp.Client.
func (cl *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	cl.c.update(string(n.SessionId), n.Update)
	return nil
}

// HandleExtensionMethod answers the agent's extension requests: through Options.Extension when
// set (a proxy passes them to the editor), else method-not-found (kiro's V3
// _kiro/auth/getAccessToken, _kiro/terminal/shell_type: qkit serves none of them).
func (cl *client) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if cl.c.o.Extension != nil {
		return cl.c.o.Extension(ctx, method, params)
	}
	cl.c.log.Debug("agent extension request not served", "method", method)
	return nil, acp.NewMethodNotFound(method)
}

// RequestPermission reports the request (permission_requested), asks Options.Permission, reports
// the answer (permission_decided) and gives it to the agent.
func (cl *client) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c := cl.c
	sid := string(req.SessionId)
	tool := *toolUpdate(req.ToolCall)
	c.mu.Lock()
	tool = c.tools[tool.ID].Merge(tool)
	c.mu.Unlock()
	opts := make([]agent.PermissionOption, 0, len(req.Options))
	for _, o := range req.Options {
		opts = append(opts, agent.PermissionOption{ID: string(o.OptionId), Name: o.Name, Kind: string(o.Kind)})
	}
	perm := agent.Permission{Tool: tool, Options: opts}
	c.emit(sid, agent.Event{Type: agent.EventPermissionRequested, Permission: &perm})

	t := c.turnOf(sid)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t != nil {
		stop := context.AfterFunc(t.ctx, cancel)
		defer stop()
	}
	d, err := cl.decide(hctx, PermissionRequest{SessionID: sid, Tool: tool, Options: opts, Raw: req})
	if err == nil && !d.Cancelled && kindOf(opts, d.OptionID) == "" {
		err = fmt.Errorf("permission for %s: the answer %q is not one of the agent's options", toolLabel(tool), d.OptionID)
	}
	var failTurn error // ends the turn, once permission_decided has been reported
	if err != nil {
		cancelled := t != nil && t.ctx.Err() != nil
		d = Decision{Cancelled: true, By: d.By}
		if d.By == "" {
			d.By = "policy"
		}
		if !cancelled && t != nil {
			failTurn = err
		}
		if !cancelled {
			c.log.Warn("permission request ended the turn", "tool", toolLabel(tool), "error", err)
		}
	}
	decided := perm
	decided.DecidedBy = d.By
	if d.Cancelled {
		decided.Decision = "cancelled"
	} else {
		decided.Decision = kindOf(opts, d.OptionID)
	}
	if decided.Decision == "allow_once" || decided.Decision == "allow_always" {
		// The writes and commands of this tool call are served while it runs (Options.Access).
		c.grant(sid, tool.ID, tool.Kind)
	}
	if decided.Decision == "reject_once" || decided.Decision == "reject_always" {
		c.mu.Lock()
		tc := c.tools[tool.ID]
		if tc.ID == "" {
			tc = tool
		}
		tc.Denied = true
		c.tools[tool.ID] = tc
		c.mu.Unlock()
		decided.Tool.Denied = true
	}
	c.emit(sid, agent.Event{Type: agent.EventPermissionDecided, Permission: &decided})
	if failTurn != nil {
		t.fail(failTurn)
	}
	if d.Cancelled {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(d.OptionID))}, nil
}

func (cl *client) decide(ctx context.Context, req PermissionRequest) (Decision, error) {
	if cl.c.o.Permission != nil {
		return cl.c.o.Permission(ctx, req)
	}
	for _, o := range req.Options {
		if o.Kind == "reject_once" || o.Kind == "reject_always" {
			return Decision{OptionID: o.ID, By: "policy"}, nil
		}
	}
	return Decision{Cancelled: true, By: "policy"}, nil
}

// kindOf is the kind of option id, "" when there is no such option.
func kindOf(opts []agent.PermissionOption, id string) string {
	for _, o := range opts {
		if o.ID == id {
			return o.Kind
		}
	}
	return ""
}

// toolLabel names a tool call for a person: its title, else its kind, else its id.
func toolLabel(t agent.ToolCall) string {
	for _, s := range []string{t.Title, t.Name, t.Kind} {
		if s != "" {
			return fmt.Sprintf("%q", s)
		}
	}
	return "tool call " + t.ID
}

// serve answers one fs/* or terminal/* request with handler h (Options.Files or Terminals), or
// -32601 when the caller gave none.
func serve[H, Q, R any](ctx context.Context, h H, method string, f func(H, context.Context, Q) (R, error), req Q) (R, error) {
	if any(h) == nil {
		var zero R
		return zero, acp.NewMethodNotFound(method)
	}
	return f(h, ctx, req)
}

func (cl *client) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return serve(ctx, cl.c.o.Files, acp.ClientMethodFsReadTextFile, Files.ReadTextFile, req)
}

// WriteTextFile writes through Options.Files what Options.Access allows.
func (cl *client) WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	if cl.c.o.Files != nil {
		if err := cl.allowed(ctx, writeAccess(req)); err != nil {
			return acp.WriteTextFileResponse{}, err
		}
	}
	return serve(ctx, cl.c.o.Files, acp.ClientMethodFsWriteTextFile, Files.WriteTextFile, req)
}

// CreateTerminal starts through Options.Terminals the commands Options.Access allows.
func (cl *client) CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	if cl.c.o.Terminals != nil {
		if err := cl.allowed(ctx, terminalAccess(req)); err != nil {
			return acp.CreateTerminalResponse{}, err
		}
	}
	return serve(ctx, cl.c.o.Terminals, acp.ClientMethodTerminalCreate, Terminals.CreateTerminal, req)
}

func (cl *client) TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return serve(ctx, cl.c.o.Terminals, acp.ClientMethodTerminalOutput, Terminals.TerminalOutput, req)
}

func (cl *client) WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return serve(ctx, cl.c.o.Terminals, acp.ClientMethodTerminalWaitForExit, Terminals.WaitForTerminalExit, req)
}

func (cl *client) KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return serve(ctx, cl.c.o.Terminals, acp.ClientMethodTerminalKill, Terminals.KillTerminal, req)
}

func (cl *client) ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return serve(ctx, cl.c.o.Terminals, acp.ClientMethodTerminalRelease, Terminals.ReleaseTerminal, req)
}
