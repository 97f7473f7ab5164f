package acpserver

import (
	"fmt"

	acp "github.com/coder/acp-go-sdk"
)

// TerminalLogin is how an editor logs the agent in from a terminal: it runs qkit (the binary it
// starts `acp serve` with) again, in a terminal, with Args. The ACP registry lists only agents that
// offer an auth method of type agent or terminal, and the person needs the agent's own login
// (`kiro-cli login`), which only a terminal can hold.
type TerminalLogin struct {
	// Args follow the qkit binary: the global flags acp serve was given (so the same agent.command
	// is logged in), then `doctor --login`.
	Args []string
	// Command is the qkit binary's path, for editors of the older `_meta` "terminal-auth" form,
	// which names the command to run.
	Command string
}

// LoginMethodID is the id of the terminal auth method.
const LoginMethodID = "qkit-login"

// cliMethodID is the agent-type method listed while nobody is logged in: authenticate with it
// checks the login again (the login itself happens in a terminal).
const cliMethodID = "cli"

// authMethods are the auth methods initialize lists. While nobody is logged in: "cli". For an
// editor that runs logins in a terminal, and whatever the login state (logging in again, as
// someone else, is a login too), the terminal method: as type "terminal" when the editor declares
// clientCapabilities.auth.terminal (ACP's terminal authentication, which acp-go-sdk v0.13.0 has as
// AuthMethodTerminalInline: id, name, description, args, env), and in the older form when it
// declares only `_meta: {"terminal-auth": true}` (Zed before the stable form; the ACP registry's
// auth check sends that): an agent-type method whose `_meta["terminal-auth"]` names the command,
// its args and a label. An editor of neither kind gets no terminal method: the spec allows type
// "terminal" only where the client opted in.
func (a *adapter) authMethods(caps acp.ClientCapabilities, loggedIn bool) []acp.AuthMethod {
	out := []acp.AuthMethod{}
	if l := a.opts.Login; l != nil {
		name := "Log in to " + a.agentName()
		desc := fmt.Sprintf("Runs '%s login' in a terminal (qkit doctor --login), then checks the login again", a.agentName())
		switch {
		case caps.Auth.Terminal:
			out = append(out, acp.AuthMethod{Terminal: &acp.AuthMethodTerminalInline{
				Type: "terminal", Id: LoginMethodID, Name: name, Description: &desc, Args: l.Args,
			}})
		case caps.Meta["terminal-auth"] == true:
			out = append(out, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
				Id: LoginMethodID, Name: name, Description: &desc,
				Meta: map[string]any{"terminal-auth": map[string]any{"command": l.Command, "args": l.Args, "label": name}},
			}})
		}
	}
	if !loggedIn {
		out = append(out, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
			Id: cliMethodID, Name: "CLI Login", Description: acp.Ptr(fmt.Sprintf("Run '%s login' to authenticate", a.agentName())),
		}})
	}
	return out
}

// knownMethod reports whether authenticate may be called with id: "cli", or the terminal method
// (an editor of the older form calls authenticate with it once its terminal login has run).
func knownMethod(id string) bool { return id == cliMethodID || id == LoginMethodID }
