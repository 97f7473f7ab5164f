package acpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// initializeAs initializes h as an editor with caps.
func initializeAs(t *testing.T, h *harness, caps acp.ClientCapabilities) acp.InitializeResponse {
	t.Helper()
	resp, err := h.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return resp
}

// ids are the auth methods' ids, in order.
func ids(methods []acp.AuthMethod) []string {
	out := []string{}
	for _, m := range methods {
		switch {
		case m.Terminal != nil:
			out = append(out, "terminal:"+m.Terminal.Id)
		case m.Agent != nil:
			out = append(out, "agent:"+m.Agent.Id)
		default:
			out = append(out, "other")
		}
	}
	return out
}

// An editor that runs logins in a terminal is offered qkit's terminal login, logged in or not (the
// ACP registry requires a method of type agent or terminal); one that does not is offered none of
// it, as before.
func TestTerminalLoginMethod(t *testing.T) {
	login := &TerminalLogin{Args: []string{"--config=/c.yaml", "doctor", "--login"}, Command: "/usr/bin/qkit"}
	h := startWith(t, "", func(o *Options) { o.Login = login })
	agentName := filepath.Base(os.Args[0])

	// The stable form: clientCapabilities.auth.terminal.
	resp := initializeAs(t, h, acp.ClientCapabilities{Auth: acp.AuthCapabilities{Terminal: true}})
	if got := ids(resp.AuthMethods); !slices.Equal(got, []string{"terminal:qkit-login"}) {
		t.Fatalf("logged in, terminal auth: %v", got)
	}
	m := resp.AuthMethods[0].Terminal
	if m.Name != "Log in to "+agentName || *m.Description != "Runs '"+agentName+" login' in a terminal (qkit doctor --login), then checks the login again" ||
		!slices.Equal(m.Args, login.Args) || len(m.Env) != 0 {
		t.Fatalf("terminal method: %+v", m)
	}
	raw, err := json.Marshal(resp.AuthMethods[0])
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(raw, &wire); err != nil || wire["type"] != "terminal" || wire["id"] != "qkit-login" {
		t.Fatalf("on the wire: %s", raw)
	}

	// Logged out: the terminal method first, then "cli".
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	resp = initializeAs(t, h, acp.ClientCapabilities{Auth: acp.AuthCapabilities{Terminal: true}})
	if got := ids(resp.AuthMethods); !slices.Equal(got, []string{"terminal:qkit-login", "agent:cli"}) {
		t.Fatalf("logged out, terminal auth: %v", got)
	}

	// The older form (_meta "terminal-auth", as the ACP registry's check sends it): an agent-type
	// method whose _meta names the command.
	resp = initializeAs(t, h, acp.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}})
	if got := ids(resp.AuthMethods); !slices.Equal(got, []string{"agent:qkit-login", "agent:cli"}) {
		t.Fatalf("logged out, _meta terminal-auth: %v", got)
	}
	meta, _ := resp.AuthMethods[0].Agent.Meta["terminal-auth"].(map[string]any)
	if meta["command"] != "/usr/bin/qkit" || meta["label"] != "Log in to "+agentName || !slices.Equal(anyStrings(meta["args"]), login.Args) {
		t.Fatalf("_meta: %+v", resp.AuthMethods[0].Agent.Meta)
	}

	// An editor of neither kind: "cli" only, as before; logged in, nothing.
	if got := ids(initializeAs(t, h, acp.ClientCapabilities{}).AuthMethods); !slices.Equal(got, []string{"agent:cli"}) {
		t.Fatalf("logged out, no terminal auth: %v", got)
	}
	t.Setenv("FAKEQ_LOGGED_OUT", "")
	if got := initializeAs(t, h, acp.ClientCapabilities{}).AuthMethods; len(got) != 0 {
		t.Fatalf("logged in, no terminal auth: %v", ids(got))
	}

	// authenticate with the terminal method checks the login again, as "cli" does.
	if _, err := h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: LoginMethodID}); err != nil {
		t.Fatalf("authenticate %s: %v", LoginMethodID, err)
	}
	_, err = h.conn.Authenticate(context.Background(), acp.AuthenticateRequest{MethodId: "other"})
	wantCode(t, "authenticate other", err, -32602, `unknown authentication method "other": expected "cli" (or "qkit-login", after its terminal login)`)
}

// Without Options.Login (a server built without it), no terminal method, even to an editor that
// could run one.
func TestNoTerminalLoginWithoutOption(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	if got := initializeAs(t, h, acp.ClientCapabilities{Auth: acp.AuthCapabilities{Terminal: true}}).AuthMethods; len(got) != 0 {
		t.Fatalf("authMethods %v", ids(got))
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Without the agent CLI, an editor that can run the terminal login still gets initialize answered
// (the ACP registry checks initialize where no agent is installed), with the terminal login only:
// no login can help, and every session request says what is missing. An editor without a terminal
// login gets the error from initialize, as before.
func TestTerminalLoginWithoutAgent(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	h := startWith(t, "", func(o *Options) {
		o.Limits.Command = missing
		o.Login = &TerminalLogin{Args: []string{"doctor", "--login"}, Command: "qkit"}
	})
	_, err := h.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	wantCode(t, "initialize without terminal login", err, -32603, "not found")

	resp := initializeAs(t, h, acp.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}})
	if got := ids(resp.AuthMethods); !slices.Equal(got, []string{"agent:qkit-login"}) {
		t.Fatalf("authMethods %v", got)
	}
	_, err = h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	wantCode(t, "session/new without the agent", err, -32603, `agent command "`+missing+`" not found`)
	_, err = h.conn.ListSessions(context.Background(), acp.ListSessionsRequest{})
	wantCode(t, "session/list without the agent", err, -32603, "not found")
}
