package acpserver

import (
	"errors"
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
//
// found is false when the agent command is not installed (see noAgent): "cli" is left out then,
// since no login can help.
func (a *adapter) authMethods(caps acp.ClientCapabilities, loggedIn, found bool) []acp.AuthMethod {
	out := []acp.AuthMethod{}
	if a.offersTerminalLogin(caps) {
		l := a.opts.Login
		name := "Log in to " + a.agentName()
		desc := fmt.Sprintf("Runs '%s login' in a terminal (qkit doctor --login), then checks the login again", a.agentName())
		if caps.Auth.Terminal {
			out = append(out, acp.AuthMethod{Terminal: &acp.AuthMethodTerminalInline{
				Type: "terminal", Id: LoginMethodID, Name: name, Description: &desc, Args: l.Args,
			}})
		} else { // _meta "terminal-auth"
			out = append(out, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
				Id: LoginMethodID, Name: name, Description: &desc,
				Meta: map[string]any{"terminal-auth": map[string]any{"command": l.Command, "args": l.Args, "label": name}},
			}})
		}
	}
	if !loggedIn && found {
		out = append(out, acp.AuthMethod{Agent: &acp.AuthMethodAgent{
			Id: cliMethodID, Name: "CLI Login", Description: acp.Ptr(fmt.Sprintf("Run '%s login' to authenticate", a.agentName())),
		}})
	}
	return out
}

// knownMethod reports whether authenticate may be called with id: "cli", or the terminal method
// (an editor of the older form calls authenticate with it once its terminal login has run).
func knownMethod(id string) bool { return id == cliMethodID || id == LoginMethodID }

// offersTerminalLogin reports whether initialize lists the terminal login to an editor with caps:
// the server has one (Options.Login) and the editor runs logins in a terminal, in either form.
func (a *adapter) offersTerminalLogin(caps acp.ClientCapabilities) bool {
	return a.opts.Login != nil && (caps.Auth.Terminal || caps.Meta["terminal-auth"] == true)
}

// noAgent records missing, the error of an agent command that is not installed (nil: it is), for
// an editor that was offered the terminal login: its initialize is answered all the same (with
// the terminal login only, whose `qkit doctor --login` says what to install; the ACP registry
// checks initialize where no agent CLI is installed), and every session request gets the error
// itself rather than "authentication required". An editor without a terminal login gets it from
// initialize, as before.
func (a *adapter) noAgent(missing error) {
	var re *acp.RequestError
	errors.As(missing, &re) // loginFailure's errors are *acp.RequestError; nil leaves re nil
	a.missing.Store(re)
}
