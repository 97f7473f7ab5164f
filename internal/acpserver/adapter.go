package acpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/acpproxy"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/stdiorpc"
)

// adapter implements the SDK's Agent interface (pinned v0.13.0: the interface changes between
// patch releases). Each method checks its input, then hands the work to the server or session
// actors; it holds no mutable state of its own.
type adapter struct {
	opts Options
	srv  *server
	pipe *stdiorpc.Pipe
	// backend runs the prompts that go to the agent (text path or proxy path).
	backend agentTurns
	conn    *acp.AgentSideConnection
	// ctx lives as long as the connection; updates and agent runs hang off it, not off a request.
	ctx   context.Context
	turns atomic.Uint64 // turn ids, unique within the connection
	// proxy is the proxy path (agent.backend acp or auto); nil: the text path only.
	proxy *acpproxy.Proxy
	// caps are the editor's capabilities from initialize.
	caps atomic.Pointer[acp.ClientCapabilities]
	// missing is the error of an agent command that is not installed, when initialize answered
	// anyway (auth.go, noAgent); nil otherwise.
	missing atomic.Pointer[acp.RequestError]
	// modelsLoaded is closed once Options.LoadModels has given loadedModels; nil without it.
	modelsLoaded chan struct{}
	loadedModels []string
}

var (
	_ acp.Agent       = (*adapter)(nil)
	_ acp.AgentLoader = (*adapter)(nil)
)

// Protocol errors with messages that say what to do. The SDK's constructors carry generic
// messages only.
func invalidParams(format string, args ...any) error {
	return &acp.RequestError{Code: -32602, Message: fmt.Sprintf(format, args...)}
}

// needSession refuses a session method without a session id: the SDK's own checks pass it (the
// schema marks sessionId required, the generated Validate does not), and it then read as a
// session "" that is not found.
func needSession(id acp.SessionId) error {
	if id == "" {
		return invalidParams("sessionId is required: name a session from session/new, session/list or session/load")
	}
	return nil
}

func notFound(format string, args ...any) error {
	return &acp.RequestError{Code: -32002, Message: fmt.Sprintf(format, args...)}
}

func internalError(err error) error {
	return &acp.RequestError{Code: -32603, Message: err.Error()}
}

func (a *adapter) authRequired() error {
	if d := agent.Describe(a.opts.Limits.Command); !d.Builtin() {
		return a.agentAuthRequired(d)
	}
	return &acp.RequestError{Code: -32000, Message: fmt.Sprintf("Authentication required: %s; then authenticate with method \"cli\"", agent.LoginHint(a.opts.Limits.Command))}
}

// agentError is the editor's error for an agent that did not open or load a session (what says
// why): "authentication required" when it is not logged in (its auth-required answer, or kiro's
// kiro-login method at initialize with no headless credential), an internal error otherwise.
func (a *adapter) agentError(what string, err error) error {
	var ae *acpclient.AgentError
	var le *agent.LoginError
	if errors.As(err, &ae) && ae.Code == acpclient.CodeAuthRequired || errors.As(err, &le) {
		return a.authRequired()
	}
	return internalError(fmt.Errorf("%s: %w", what, err))
}

// Initialize answers with protocol version 1 and the capabilities; authMethods (auth.go) lists the
// terminal login to an editor that can run one, and "cli" while nobody is logged in.
func (a *adapter) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.caps.Store(&p.ClientCapabilities)
	err := a.whoami(ctx)
	ferr := loginFailure(err)
	if ferr != nil && !a.offersTerminalLogin(p.ClientCapabilities) {
		return acp.InitializeResponse{}, ferr
	}
	a.noAgent(ferr)
	loggedIn := err == nil
	a.srv.setAuthenticated(loggedIn)
	resp := acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true},
			SessionCapabilities: acp.SessionCapabilities{
				List:   &acp.SessionListCapabilities{},
				Resume: &acp.SessionResumeCapabilities{},
				Close:  &acp.SessionCloseCapabilities{},
			},
		},
		AgentInfo:   &acp.Implementation{Name: "qkit", Title: acp.Ptr("qkit (Amazon Q Developer CLI)"), Version: a.opts.Version},
		AuthMethods: a.authMethods(p.ClientCapabilities, loggedIn, ferr == nil),
	}
	if err := a.proxyInitialize(ctx, &resp); err != nil {
		return acp.InitializeResponse{}, err
	}
	return resp, nil
}

// whoami is the login check (agent.CheckLogin): KIRO_API_KEY and AMAZON_Q_SIGV4 count as logged
// in, otherwise `<agent.command> whoami` is read as the real CLI prints it. A missing binary is an
// *agent.MissingCommandError, never "log in".
func (a *adapter) whoami(ctx context.Context) error {
	login, err := agent.CheckLogin(ctx, a.opts.Limits.Command, nil)
	if err != nil {
		a.opts.Logger.Info("not logged in", "command", a.opts.Limits.Command, "err", err)
		return err
	}
	a.opts.Logger.Debug("logged in", "method", login.Method)
	return nil
}

// loginFailure is the answer to initialize or authenticate when the check could not run at all
// (the agent CLI is missing): the editor shows it, instead of a login that cannot help.
func loginFailure(err error) error {
	var missing *agent.MissingCommandError
	if errors.As(err, &missing) {
		return internalError(err)
	}
	return nil
}

// Authenticate with method "cli" (or the terminal method) checks the login again: the login itself
// happens in a terminal.
func (a *adapter) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if handled, err := a.agentAuthenticate(ctx, p); handled {
		return acp.AuthenticateResponse{}, err
	}
	if !knownMethod(p.MethodId) {
		return acp.AuthenticateResponse{}, invalidParams("unknown authentication method %q: expected %q (or %q, after its terminal login)", p.MethodId, cliMethodID, LoginMethodID)
	}
	if err := a.whoami(ctx); err != nil {
		a.srv.setAuthenticated(false)
		if ferr := loginFailure(err); ferr != nil {
			return acp.AuthenticateResponse{}, ferr
		}
		return acp.AuthenticateResponse{}, a.authRequired()
	}
	a.srv.setAuthenticated(true)
	return acp.AuthenticateResponse{}, nil
}

func (a *adapter) requireAuth() error {
	a.pipe.Settled(a.ctx, acp.AgentMethodInitialize)
	if err := a.missing.Load(); err != nil {
		return err
	}
	if !a.srv.isAuthenticated() {
		return a.authRequired()
	}
	return nil
}

// checkCwd requires an absolute path to an existing folder.
func checkCwd(cwd string) (string, error) {
	if cwd == "" {
		return "", invalidParams("cwd is required: pass the absolute path of the project folder")
	}
	if !filepath.IsAbs(cwd) {
		return "", invalidParams("cwd %q is not an absolute path", cwd)
	}
	st, err := os.Stat(cwd)
	if err != nil {
		return "", invalidParams("cwd %q does not exist", cwd)
	}
	if !st.IsDir() {
		return "", invalidParams("cwd %q is not a folder", cwd)
	}
	return filepath.Clean(cwd), nil
}

// NewSession creates a session in the database and starts its actor. The available commands go
// out only once the response has been written: editors drop updates for unknown sessions.
func (a *adapter) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if err := a.requireAuth(); err != nil {
		return acp.NewSessionResponse{}, err
	}
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	mcp, err := json.Marshal(p.McpServers)
	if err != nil {
		return acp.NewSessionResponse{}, invalidParams("mcpServers: %v", err)
	}
	now := a.opts.Now()
	rec := sessions.SessionRecord{ID: uuid.NewString(), Cwd: cwd, MCPServers: mcp, Model: a.opts.Model, Backend: sessions.BackendText, Origin: sessions.OriginACPServe, CreatedAt: now, UpdatedAt: now}
	var ps *acpproxy.Session
	if a.proxy != nil && a.proxy.Available(ctx) {
		if ps, err = a.proxy.Create(ctx, &rec, p.McpServers); err != nil {
			return acp.NewSessionResponse{}, a.agentError("the agent did not open a session", err)
		}
	}
	if err := a.opts.Store.Create(ctx, rec); err != nil {
		if ps != nil {
			a.proxy.Close(ctx, rec.ID)
		}
		return acp.NewSessionResponse{}, internalError(err)
	}
	a.srv.open(rec.ID, func() *sessionHandle { return a.startSession(rec) })
	a.announce(rec)
	resp := acp.NewSessionResponse{SessionId: acp.SessionId(rec.ID), ConfigOptions: a.configOptions(rec)}
	if ps != nil {
		resp.Modes = ps.ModeState() // the agent's modes (kiro: its agents), set through session/set_mode
	}
	return resp, nil
}

// announce sends the session's commands once the response naming it is out: qkit's slash
// commands on the text path; on the proxy path, the agent's updates that waited and the merged
// commands.
func (a *adapter) announce(rec sessions.SessionRecord) {
	if rec.Backend == sessions.BackendACP && a.proxy != nil {
		if s := a.proxy.Session(rec.ID); s != nil {
			key, _ := json.Marshal(rec.ID)
			a.pipe.AfterResponse(`"sessionId":`+string(key), func() { a.proxy.MakeReady(s) })
			return
		}
	}
	a.announceCommands(rec.ID)
}

// onProxy says whether session rec's prompts go through the proxy path in this server: it was
// opened on it, and the agent speaks ACP. Otherwise the text path serves it, with its transcript.
func (a *adapter) onProxy(ctx context.Context, rec sessions.SessionRecord) bool {
	return rec.Backend == sessions.BackendACP && a.proxy != nil && a.proxy.Available(ctx)
}

// clientCaps are the capabilities the editor gave in initialize.
func (a *adapter) clientCaps() acp.ClientCapabilities {
	if c := a.caps.Load(); c != nil {
		return *c
	}
	return acp.ClientCapabilities{}
}

// reopen checks a session/load or session/resume request and opens the session's actor.
func (a *adapter) reopen(ctx context.Context, id acp.SessionId, cwd string) (sessions.SessionRecord, *sessionHandle, error) {
	if err := needSession(id); err != nil {
		return sessions.SessionRecord{}, nil, err
	}
	if err := a.requireAuth(); err != nil {
		return sessions.SessionRecord{}, nil, err
	}
	cwd, err := checkCwd(cwd)
	if err != nil {
		return sessions.SessionRecord{}, nil, err
	}
	rec, err := a.opts.Store.Get(ctx, string(id))
	if errors.Is(err, sessions.ErrSessionNotFound) {
		return rec, nil, notFound("session %q not found", id)
	}
	if err != nil {
		return rec, nil, internalError(err)
	}
	// A session runs q in its own folder. Loaded from another one it would either run where the
	// editor does not expect or change what the session is about, so it is refused; the editor
	// learns which folder the session belongs to (session/list gives it too). The folder reached
	// through a link is the same folder, as at every door (sessionrec.SameFolder).
	if !sessionrec.SameFolder(rec.Cwd, cwd) {
		return rec, nil, invalidParams("session %q belongs to the folder %q, not %q: open it with that cwd", id, rec.Cwd, cwd)
	}
	h := a.srv.open(rec.ID, func() *sessionHandle { return a.startSession(rec) })
	return rec, h, nil
}

// LoadSession replays the whole transcript as session/update notifications, in order, and only
// then answers (the SDK client waits for the notifications before it sees the response).
func (a *adapter) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	rec, h, err := a.reopen(ctx, p.SessionId, p.Cwd)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	replayed := false
	if a.onProxy(ctx, rec) {
		if _, replayed, err = a.proxy.Reopen(ctx, rec, p.McpServers, true); err != nil {
			return acp.LoadSessionResponse{}, a.agentError("the agent did not load the session", err)
		}
	}
	if !replayed {
		msgs, err := a.opts.Store.Messages(ctx, rec.ID)
		if err != nil {
			return acp.LoadSessionResponse{}, internalError(err)
		}
		if err := a.replay(rec.ID, msgs); err != nil {
			return acp.LoadSessionResponse{}, internalError(fmt.Errorf("replaying session %s: %w", rec.ID, err))
		}
	}
	opts, err := a.sessionConfig(h)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	a.announce(rec)
	// _meta names the session so the response watcher can tell this response apart.
	return acp.LoadSessionResponse{ConfigOptions: opts, Meta: map[string]any{"sessionId": rec.ID}}, nil
}

// replayBatch is how many bytes of replayed updates go out in one write: one write per update made
// the system calls cost as much as everything else.
const replayBatch = 64 << 10

// replay sends the transcript msgs of session id as message chunks, in order: a prompt as the
// content blocks the client sent (or as its text), a reply as text.
func (a *adapter) replay(id string, msgs []sessions.Message) error {
	buf := make([]byte, 0, replayBatch+4<<10)
	var block bytes.Buffer
	for _, m := range msgs {
		switch {
		case m.Role == sessions.RoleUser && len(m.Blocks) > 0:
			var blocks []json.RawMessage
			if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
				return fmt.Errorf("stored prompt: %w", err)
			}
			for _, b := range blocks {
				block.Reset()
				if err := json.Compact(&block, b); err != nil { // one line each, whatever is stored
					return fmt.Errorf("stored prompt: %w", err)
				}
				buf = appendChunk(buf, id, kindUserChunk, block.Bytes())
			}
		case m.Role == sessions.RoleUser && m.Text == "":
			continue
		case m.Role == sessions.RoleUser:
			buf = appendTextChunk(buf, id, kindUserChunk, m.Text)
		default:
			// The reply and how it ended: the editor saw qkit's notice at the time, which the
			// transcript keeps as data (sessionrec.ReplyText, as in the history on every door).
			text := sessionrec.ReplyText(m)
			if text == "" {
				continue
			}
			buf = appendTextChunk(buf, id, kindAgentChunk, text)
		}
		if len(buf) >= replayBatch {
			if err := a.sendLines(0, buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) == 0 {
		return nil
	}
	return a.sendLines(0, buf)
}

// ResumeSession opens a stored session without replaying it.
func (a *adapter) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	rec, h, err := a.reopen(ctx, p.SessionId, p.Cwd)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	if a.onProxy(ctx, rec) {
		if _, _, err = a.proxy.Reopen(ctx, rec, p.McpServers, false); err != nil {
			return acp.ResumeSessionResponse{}, a.agentError("the agent did not load the session", err)
		}
	}
	opts, err := a.sessionConfig(h)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	a.announce(rec)
	return acp.ResumeSessionResponse{ConfigOptions: opts, Meta: map[string]any{"sessionId": rec.ID}}, nil
}

// sessionConfig asks an open session for its config options.
func (a *adapter) sessionConfig(h *sessionHandle) ([]acp.SessionConfigOption, error) {
	reply := make(chan []acp.SessionConfigOption, 1)
	if _, err := a.srv.route(h.id, msgConfig{reply: reply}); err != nil {
		return nil, a.routeError(h.id, err)
	}
	select {
	case opts := <-reply:
		return opts, nil
	case <-h.done:
		return nil, invalidParams("session %q was closed", h.id)
	}
}

// routeError explains why a session could not be reached.
func (a *adapter) routeError(id string, err error) error {
	if id == "" {
		return needSession("")
	}
	if errors.Is(err, errBusy) {
		return &acp.RequestError{Code: -32603, Message: fmt.Sprintf("session %q is busy: too many requests queued (at most %d)", id, inboxSize)}
	}
	if _, gerr := a.opts.Store.Get(a.ctx, id); errors.Is(gerr, sessions.ErrSessionNotFound) {
		return notFound("session %q not found", id)
	}
	return invalidParams("session %q is not open in this connection (closed, or from an earlier run): call session/load or session/resume first", id)
}

// ListSessions lists stored sessions, newest first, optionally only those in cwd.
func (a *adapter) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	if err := a.requireAuth(); err != nil {
		return acp.ListSessionsResponse{}, err
	}
	cwd, after := "", ""
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return acp.ListSessionsResponse{}, invalidParams("cwd %q is not an absolute path", *p.Cwd)
		}
		cwd = filepath.Clean(*p.Cwd)
	}
	if p.Cursor != nil {
		after = *p.Cursor
		// The cursor is the id of the last session of the previous page.
		if _, err := a.opts.Store.Get(ctx, after); errors.Is(err, sessions.ErrSessionNotFound) {
			return acp.ListSessionsResponse{}, invalidParams("cursor %q is not one session/list gave: pass its nextCursor, or none for the first page", after)
		}
	}
	const page = 100
	recs, err := a.opts.Store.List(ctx, cwd, after, page+1)
	if err != nil {
		return acp.ListSessionsResponse{}, internalError(err)
	}
	resp := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}
	if len(recs) > page {
		recs = recs[:page]
		resp.NextCursor = acp.Ptr(recs[page-1].ID)
	}
	for _, r := range recs {
		info := acp.SessionInfo{SessionId: acp.SessionId(r.ID), Cwd: r.Cwd, UpdatedAt: acp.Ptr(r.UpdatedAt.Format(time.RFC3339Nano))}
		if r.Title != "" {
			info.Title = acp.Ptr(r.Title)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	return resp, nil
}

// Prompt runs one turn. It never returns the request context's error: a cancelled turn answers
// stopReason "cancelled" (the SDK would turn context.Canceled into error -32800).
func (a *adapter) Prompt(reqCtx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	if err := needSession(p.SessionId); err != nil {
		return acp.PromptResponse{}, err
	}
	if err := a.requireAuth(); err != nil {
		return acp.PromptResponse{}, err
	}
	var caps acp.PromptCapabilities // what the agent takes beyond text: only on the proxy path
	if a.proxy != nil && a.proxy.Session(string(p.SessionId)) != nil {
		caps, _ = a.agentPrompt()
	}
	prompt, err := newUserPrompt(p.Prompt, caps)
	if err != nil {
		return acp.PromptResponse{}, invalidParams("%v", err)
	}
	id := string(p.SessionId)
	t := &turn{id: a.turns.Add(1), prompt: prompt, reply: make(chan turnResult, 1)}
	h, err := a.srv.route(id, msgPrompt{t: t})
	if err != nil {
		return acp.PromptResponse{}, a.routeError(id, err)
	}
	var res turnResult
	select {
	case res = <-t.reply:
	case <-reqCtx.Done():
		// session/cancel, a newer prompt in this session, $/cancel_request or a disconnect.
		if _, err := a.srv.route(id, msgCancel{id: t.id}); err != nil {
			a.opts.Logger.Debug("cancel not delivered", "session", id, "err", err)
		}
		select {
		case res = <-t.reply:
		case <-h.done:
			res = turnResult{stop: acp.StopReasonCancelled}
		}
	case <-h.done:
		res = turnResult{stop: acp.StopReasonCancelled}
	}
	if res.err != nil {
		return acp.PromptResponse{}, internalError(res.err)
	}
	return acp.PromptResponse{StopReason: res.stop}, nil
}

// Cancel stops the session's running turn: its process group is killed, a pending permission
// request is withdrawn, and the prompt answers "cancelled".
func (a *adapter) Cancel(ctx context.Context, p acp.CancelNotification) error {
	if _, err := a.srv.route(string(p.SessionId), msgCancel{}); err != nil {
		a.opts.Logger.Debug("session/cancel for a session that is not open", "session", p.SessionId, "err", err)
	}
	return nil
}

// CloseSession cancels the session's work, waits for it to end and frees the actor.
func (a *adapter) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	if err := needSession(p.SessionId); err != nil {
		return acp.CloseSessionResponse{}, err
	}
	if err := a.requireAuth(); err != nil {
		return acp.CloseSessionResponse{}, err
	}
	id := string(p.SessionId)
	reply := make(chan struct{}, 1)
	h, err := a.srv.route(id, msgClose{reply: reply})
	if err != nil {
		if _, gerr := a.opts.Store.Get(ctx, id); errors.Is(gerr, sessions.ErrSessionNotFound) {
			return acp.CloseSessionResponse{}, notFound("session %q not found", id)
		}
		if errors.Is(err, errBusy) {
			return acp.CloseSessionResponse{}, a.routeError(id, err)
		}
		return acp.CloseSessionResponse{}, nil // stored but not open here: nothing to free
	}
	select {
	case <-reply:
	case <-h.done:
	}
	<-h.done
	if a.proxy != nil {
		a.proxy.Close(ctx, id)
	}
	return acp.CloseSessionResponse{}, nil
}

// SetSessionMode goes to the agent on the proxy path (kiro's modes are its agents). The text path
// offers no modes (the agent profile is fixed for the server's life), so it answers
// method-not-found.
func (a *adapter) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	if err := needSession(p.SessionId); err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if a.proxy != nil {
		if s := a.proxy.Session(string(p.SessionId)); s != nil {
			if err := a.requireAuth(); err != nil {
				return acp.SetSessionModeResponse{}, err
			}
			if err := a.proxy.SetMode(ctx, s, string(p.ModeId)); err != nil {
				return acp.SetSessionModeResponse{}, err
			}
			return acp.SetSessionModeResponse{}, nil
		}
	}
	return acp.SetSessionModeResponse{}, &acp.RequestError{Code: -32601, Message: "session/set_mode is not supported: qkit has no session modes (choose the agent profile with `qkit acp serve --agent`)", Data: map[string]any{"method": acp.AgentMethodSessionSetMode}}
}

// configModel is the id of the model config option.
const configModel = "model"

// defaultModel is the option value meaning "let q choose" (no --model).
const defaultModel = "default"

// configOptions is the model selector of session rec, of category "model".
func (a *adapter) configOptions(rec sessions.SessionRecord) []acp.SessionConfigOption {
	models := a.sessionModels(rec)
	current := rec.Model
	if current == "" {
		current = defaultModel
	}
	opts := acp.SessionConfigSelectOptionsUngrouped{{Value: defaultModel, Name: "Default", Description: acp.Ptr("the agent's default model")}}
	for _, m := range models {
		opts = append(opts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m), Name: m})
	}
	o := acp.NewSessionConfigOptionSelect(acp.SessionConfigValueId(current), acp.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = configModel
	o.Select.Name = "Model"
	o.Select.Category = acp.Ptr(acp.SessionConfigOptionCategoryModel)
	o.Select.Description = acp.Ptr("the model the agent uses for this session's prompts")
	return []acp.SessionConfigOption{o}
}

// sessionModels are the models session rec can use: on the proxy path the agent's own list, or,
// when it gave none, only what agent.models and --model name (never q's offline list, which is
// not the agent's); the configured ones otherwise.
func (a *adapter) sessionModels(rec sessions.SessionRecord) []string {
	if rec.Backend == sessions.BackendACP && a.proxy != nil {
		if models, _ := a.proxy.Models(rec.ID); len(models) > 0 {
			return models
		}
		models := slices.Clone(a.opts.Limits.Models)
		if a.opts.Model != "" && !slices.Contains(models, a.opts.Model) {
			models = append(models, a.opts.Model)
		}
		return models
	}
	return a.models()
}

func (a *adapter) models() []string {
	models := slices.Clone(a.opts.Models)
	if a.modelsLoaded != nil {
		select {
		case <-a.modelsLoaded:
			models = slices.Clone(a.loadedModels)
		case <-a.ctx.Done():
		}
	}
	if a.opts.Model != "" && !slices.Contains(models, a.opts.Model) {
		models = append(models, a.opts.Model)
	}
	return models
}

// SetSessionConfigOption sets the session's model.
func (a *adapter) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	if err := a.requireAuth(); err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	v := p.ValueId
	if v == nil {
		return acp.SetSessionConfigOptionResponse{}, invalidParams("unknown config option: the only option is %q, a select", configModel)
	}
	if v.ConfigId != configModel {
		return acp.SetSessionConfigOptionResponse{}, invalidParams("unknown config option %q: the only option is %q", v.ConfigId, configModel)
	}
	if err := needSession(v.SessionId); err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	model := string(v.Value)
	id := string(v.SessionId)
	rec, err := a.opts.Store.Get(ctx, id)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, a.routeError(id, errNotOpen)
	}
	models := a.sessionModels(rec)
	if model == defaultModel {
		model = ""
	} else if len(models) > 0 && !slices.Contains(models, model) {
		// No list (agent.models empty, and the agent gave none): any model passes, as in ask.
		return acp.SetSessionConfigOptionResponse{}, invalidParams("unknown model %q: choose one of %q", v.Value, append([]string{defaultModel}, models...))
	}
	reply := make(chan setModelReply, 1)
	h, err := a.srv.route(id, msgSetModel{model: model, reply: reply})
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, a.routeError(id, err)
	}
	select {
	case r := <-reply:
		var refused *agentRefusal
		if errors.As(r.err, &refused) {
			return acp.SetSessionConfigOptionResponse{}, acpproxy.RequestError(refused.err)
		}
		if r.err != nil {
			return acp.SetSessionConfigOptionResponse{}, internalError(r.err)
		}
		return acp.SetSessionConfigOptionResponse{ConfigOptions: r.options}, nil
	case <-h.done:
		return acp.SetSessionConfigOptionResponse{}, invalidParams("session %q was closed", id)
	}
}
