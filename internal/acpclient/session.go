package acpclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// turn is a prompt in flight.
type turn struct {
	ctx    context.Context // ends when the turn is cancelled
	cancel context.CancelFunc
	once   sync.Once
	err    error         // why a handler ended the turn
	failed chan struct{} // closed with err
}

func (t *turn) fail(err error) {
	t.once.Do(func() {
		t.err = err
		close(t.failed)
	})
}

// NewSession opens a session in cwd (absolute) with the given MCP servers.
func (c *Conn) NewSession(ctx context.Context, cwd string, mcp []acp.McpServer) (acp.NewSessionResponse, error) {
	if mcp == nil {
		mcp = []acp.McpServer{}
	}
	resp, err := call(c, ctx, func(ctx context.Context) (acp.NewSessionResponse, error) {
		return c.csc.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: mcp})
	})
	if err != nil {
		return resp, c.sessionError("session/new", err)
	}
	c.log.Info("ACP session opened", "session", resp.SessionId)
	return resp, nil
}

// LoadSession loads session id: the agent replays its history through OnEvent and
// OnNotification before this returns. It gives up after Options.LoadTimeout (kiro may hang on an
// unknown session); the connection should then be closed.
func (c *Conn) LoadSession(ctx context.Context, id, cwd string, mcp []acp.McpServer) (acp.LoadSessionResponse, error) {
	if !c.init.AgentCapabilities.LoadSession {
		return acp.LoadSessionResponse{}, fmt.Errorf("the agent cannot load sessions (it does not advertise loadSession)")
	}
	if mcp == nil {
		mcp = []acp.McpServer{}
	}
	lctx, cancel := context.WithTimeout(ctx, c.o.LoadTimeout)
	defer cancel()
	resp, err := call(c, lctx, func(ctx context.Context) (acp.LoadSessionResponse, error) {
		return c.csc.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: cwd, McpServers: mcp})
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return resp, fmt.Errorf("session %q: session/load got no answer within %s (the agent may not know the session)", id, c.o.LoadTimeout)
	}
	var ae *AgentError
	if errors.As(err, &ae) && sessionNotFound(ae) {
		return resp, &SessionNotFoundError{ID: id, Err: ae}
	}
	if err != nil {
		return resp, c.sessionError(fmt.Sprintf("session %q: session/load", id), err)
	}
	return resp, nil
}

func (c *Conn) sessionError(what string, err error) error {
	var ae *AgentError
	if errors.As(err, &ae) && ae.Code == CodeAuthRequired {
		// The text runner's login failure too, with the same advice (kiro-cli login, or
		// KIRO_API_KEY for headless runs), and what the agent itself says to do.
		login := &agent.LoginError{Command: c.agent().Command, Detail: "the agent needs a login"}
		for _, m := range c.init.AuthMethods {
			if m.Agent != nil && m.Agent.Description != nil {
				login.Detail += ": " + *m.Agent.Description
				break
			}
		}
		return fmt.Errorf("%s: %w (%w)", what, login, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Prompt sends one prompt to a session and returns when the turn ends, with the agent's stop
// reason. Updates arrive through OnEvent meanwhile. When ctx ends, the turn is cancelled
// (session/cancel, and permission requests still open are answered cancelled) and Prompt waits up
// to Options.Grace for the agent to finish it; it then returns ctx's error with the stop reason
// the agent gave, if any. A permission handler's error ends the turn the same way and is
// returned. An agent error (kiro answers model failures with -32603) is an *AgentError.
func (c *Conn) Prompt(ctx context.Context, sessionID string, prompt []acp.ContentBlock) (acp.StopReason, error) {
	t := &turn{failed: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(c.life)
	defer t.cancel()
	c.mu.Lock()
	c.turns[sessionID] = t
	delete(c.grants, sessionID) // a permission covers requests of its own turn only
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.turns[sessionID] == t {
			delete(c.turns, sessionID)
			delete(c.grants, sessionID)
		}
		c.mu.Unlock()
	}()

	type answer struct {
		resp acp.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := c.csc.Prompt(c.life, acp.PromptRequest{SessionId: acp.SessionId(sessionID), Prompt: prompt})
		done <- answer{resp, err}
	}()
	finish := func(a answer) (acp.StopReason, error) {
		if a.err != nil {
			if c.gone() {
				return "", fmt.Errorf("the agent ended during the turn: %w", c.Err())
			}
			return "", agentError(a.err)
		}
		return a.resp.StopReason, nil
	}
	// stop cancels the turn and waits (a grace at most) for the agent to end it.
	stop := func(why error) (acp.StopReason, error) {
		c.Cancel(sessionID)
		tm := time.NewTimer(c.o.Grace)
		defer tm.Stop()
		select {
		case a := <-done:
			reason, _ := finish(a)
			return reason, why
		case <-tm.C:
		case <-c.dead:
		}
		return "", why
	}
	select {
	case a := <-done:
		if t.err != nil {
			return "", t.err
		}
		return finish(a)
	case <-t.failed:
		return stop(t.err)
	case <-ctx.Done():
		return stop(ctx.Err())
	case <-c.dead:
		return "", fmt.Errorf("the agent ended during the turn: %w", c.Err())
	}
}

// Cancel cancels the session's turn: session/cancel to the agent, and the turn's open permission
// requests are answered cancelled.
func (c *Conn) Cancel(sessionID string) {
	c.mu.Lock()
	t := c.turns[sessionID]
	c.mu.Unlock()
	if t != nil {
		t.cancel()
	}
	if err := c.csc.Cancel(c.life, acp.CancelNotification{SessionId: acp.SessionId(sessionID)}); err != nil {
		c.log.Debug("session/cancel not sent", "error", err)
	}
}

func (c *Conn) turnOf(sessionID string) *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns[sessionID]
}
