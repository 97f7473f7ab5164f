package fakeq

// FAKEQ_ACP_GENERIC=1 makes `q acp` a third-party ACP agent rather than kiro-cli, for qkit's
// generic agent (agent.command given as a whole command line, such as `goose acp`):
//
//   - it takes no launch flags: an argument after `acp` is an error (exit 2), as an agent that does
//     not know kiro's --agent, --model, -a and --trust-tools would refuse them;
//   - initialize: agentInfo "Generic Agent", mcpCapabilities http and sse, promptCapabilities image
//     and embeddedContext, and, with FAKEQ_LOGGED_OUT, its own auth method "generic-login";
//   - logged out, session/new answers auth_required (-32000) until `authenticate` with
//     generic-login (then the process is logged in);
//   - sessions offer modes default and plan (session/set_mode refuses others) and the model as a
//     config option of category model, gen-small (the default) or gen-large; a model it does not
//     have is refused (-32602); session/set_model, gone from the schema, is -32601.
//     FAKEQ_ACP_NO_MODELS=1: no model choice at all;
//   - no _kiro.dev notifications; FAKEQ_ACP_SAY_SETTINGS=1 starts the reply with "[mode M, model
//     X]";
//   - extension methods: _generic/echo answers {"echo": params}; _generic/roundtrip notifies the
//     client _generic/pong and asks it _generic/editor {sessionId}, answering {"editor": its
//     answer}; every _generic/* call or notification is appended to FAKEQ_ACP_EXT (method and
//     params, one line each).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
)

// generic: the fake plays a third-party ACP agent (FAKEQ_ACP_GENERIC).
func generic() bool { return os.Getenv("FAKEQ_ACP_GENERIC") != "" }

// genericArgs refuses any launch flag, as an agent that knows none of kiro's would.
func genericArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument '%s' found", args[0])
	}
	return nil
}

func (a *acpAgent) genericInitialize() acp.InitializeResponse {
	resp := acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    acp.McpCapabilities{Http: true, Sse: true},
		},
		AgentInfo:   &acp.Implementation{Name: "Generic Agent", Version: "0.9.0"},
		AuthMethods: []acp.AuthMethod{},
	}
	if loggedOut() {
		desc := "Sign in with the generic agent's own account"
		resp.AuthMethods = []acp.AuthMethod{{Agent: &acp.AuthMethodAgent{Id: "generic-login", Name: "Generic Login", Description: &desc}}}
	}
	return resp
}

func (a *acpAgent) genericNewSession(p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	authed := a.authed
	a.mu.Unlock()
	if loggedOut() && !authed {
		return acp.NewSessionResponse{}, acp.NewAuthRequired(map[string]any{"details": "sign in first (generic-login)"})
	}
	s := &acpSession{id: uuid.NewString(), cwd: p.Cwd, trusted: map[string]bool{}, ready: make(chan struct{}), mcp: p.McpServers,
		model: "gen-small", mode: "default"}
	close(s.ready)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	if err := os.MkdirAll(sessionDir(), 0o700); err == nil {
		_ = os.WriteFile(sessionFile(s.id), nil, 0o600)
	}
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id), Modes: genericModes(s.mode), ConfigOptions: genericConfig(s.model)}, nil
}

func genericModes(current string) *acp.SessionModeState {
	return &acp.SessionModeState{CurrentModeId: acp.SessionModeId(current), AvailableModes: []acp.SessionMode{
		{Id: "default", Name: "Default"}, {Id: "plan", Name: "Plan"},
	}}
}

var genericModels = []string{"gen-small", "gen-large"}

// genericConfig is the session's model option (none with FAKEQ_ACP_NO_MODELS).
func genericConfig(current string) []acp.SessionConfigOption {
	if os.Getenv("FAKEQ_ACP_NO_MODELS") != "" {
		return nil
	}
	var opts acp.SessionConfigSelectOptionsUngrouped
	for _, m := range genericModels {
		opts = append(opts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m), Name: m})
	}
	o := acp.NewSessionConfigOptionSelect(acp.SessionConfigValueId(current), acp.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = "model"
	o.Select.Name = "Model"
	o.Select.Category = acp.Ptr(acp.SessionConfigOptionCategoryModel)
	return []acp.SessionConfigOption{o}
}

func (a *acpAgent) genericSetConfig(p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil || v.ConfigId != "model" || os.Getenv("FAKEQ_ACP_NO_MODELS") != "" {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"details": "no such config option"})
	}
	if !strings.Contains(","+strings.Join(genericModels, ",")+",", ","+string(v.Value)+",") {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"details": "unknown model " + string(v.Value)})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(v.SessionId)]
	if s == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"details": "unknown session"})
	}
	s.model = string(v.Value)
	return acp.SetSessionConfigOptionResponse{ConfigOptions: genericConfig(s.model)}, nil
}

func (a *acpAgent) genericSetMode(p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	if p.ModeId != "default" && p.ModeId != "plan" {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(map[string]any{"details": "unknown mode " + string(p.ModeId)})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[string(p.SessionId)]; s != nil {
		s.mode = string(p.ModeId)
	}
	return acp.SetSessionModeResponse{}, nil
}

func (a *acpAgent) genericAuthenticate(p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if p.MethodId != "generic-login" {
		return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{"details": "unknown auth method " + string(p.MethodId)})
	}
	a.mu.Lock()
	a.authed = true
	a.mu.Unlock()
	return acp.AuthenticateResponse{}, nil
}

// genericExtension records every _generic/* call and answers _generic/echo; _generic/roundtrip
// asks the client's _generic/editor (with the params' session) and answers what it said, after
// notifying _generic/pong, which names no session.
func (a *acpAgent) genericExtension(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "_generic/roundtrip" {
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(params, &p)
		_ = a.conn.NotifyExtension(ctx, "_generic/pong", map[string]any{"n": 3})
		out, err := a.conn.CallExtension(ctx, "_generic/editor", map[string]any{"sessionId": p.SessionID})
		if err != nil {
			return nil, err
		}
		return map[string]any{"editor": out}, nil
	}
	if !strings.HasPrefix(method, "_generic/") {
		return nil, acp.NewMethodNotFound(method)
	}
	if f := os.Getenv("FAKEQ_ACP_EXT"); f != "" {
		if out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_, _ = fmt.Fprintf(out, "%s %s\n", method, params)
			_ = out.Close()
		}
	}
	if method == "_generic/echo" {
		return map[string]any{"echo": params}, nil
	}
	return map[string]any{}, nil
}

// genericSettings is what FAKEQ_ACP_SAY_SETTINGS puts before the reply.
func (s *acpSession) genericSettings() string {
	return fmt.Sprintf("[mode %s, model %s]\n", s.mode, s.model)
}
