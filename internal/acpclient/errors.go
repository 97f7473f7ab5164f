package acpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// NotACPError is returned by Start when the agent ended before answering initialize, or answered
// with something that is not JSON-RPC: it does not speak ACP. Its message says the way out.
type NotACPError struct {
	// Command is what was run, without its flags: "q acp", "goose acp".
	Command string
	Err     error
	// Chat is set for an agent that also has a chat mode (q, kiro-cli): agent.backend can pick it.
	Chat bool
}

func (e *NotACPError) Error() string {
	if !e.Chat {
		return fmt.Sprintf("%s does not speak the Agent Client Protocol: %v; agent.command must be the agent's command line "+
			"in ACP mode (such as goose acp or gemini --experimental-acp)", e.Command, e.Err)
	}
	return fmt.Sprintf("%s does not speak the Agent Client Protocol (kiro-cli 1.25 or later does; q 1.19 does not): %v; "+
		"with agent.backend auto qkit probes the agent again on the next run (qkit ask --refresh-backend probes it now), "+
		"or set agent.backend chat to run it with chat --no-interactive", e.Command, e.Err)
}

func (e *NotACPError) Unwrap() error { return e.Err }

// AgentError is a JSON-RPC error the agent answered with.
type AgentError struct {
	Code    int
	Message string
	Details string
}

func (e *AgentError) Error() string {
	s := fmt.Sprintf("the agent answered error %d: %s", e.Code, e.Message)
	if e.Details != "" && e.Details != e.Message {
		s += ": " + e.Details
	}
	return s
}

// Error codes the client acts on.
const (
	CodeMethodNotFound = -32601
	CodeInternal       = -32603
	CodeAuthRequired   = -32000
	// CodeResourceNotFound is ACP's "resource not found".
	CodeResourceNotFound = -32002
)

// SessionNotFoundError is the agent's answer to session/load that it does not know the session.
type SessionNotFoundError struct {
	ID  string
	Err error // the agent's answer, an *AgentError
}

func (e *SessionNotFoundError) Error() string {
	return fmt.Sprintf("session %q not found: session/load: %v", e.ID, e.Err)
}

func (e *SessionNotFoundError) Unwrap() error { return e.Err }

// notFoundSession matches kiro's "Failed to start session: session <id> not found" (and "Session
// not found"), not "Failed to start session: Session is active in another process" nor an error
// about something else after the colon.
var notFoundSession = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bsession\b[^:]*\bnot found\b`) })

// sessionNotFound says whether the agent's answer to session/load means the session does not
// exist: ACP's resource-not-found code, or kiro's internal error saying so.
func sessionNotFound(e *AgentError) bool {
	switch e.Code {
	case CodeResourceNotFound:
		return true
	case CodeInternal:
		return notFoundSession().MatchString(e.Message + ": " + e.Details)
	}
	return false
}

func agentError(err error) error {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return err
	}
	ae := &AgentError{Code: re.Code, Message: re.Message}
	switch d := re.Data.(type) {
	case string:
		ae.Details = d
	case map[string]any:
		for _, k := range []string{"details", "error", "message"} {
			if s, ok := d[k].(string); ok {
				ae.Details = s
				break
			}
		}
		if ae.Details == "" && len(d) > 0 {
			b, _ := json.Marshal(d)
			ae.Details = string(b)
		}
	}
	// The agent's words go into a message on the user's terminal.
	ae.Message, ae.Details = agent.Printable(ae.Message), agent.Printable(ae.Details)
	return ae
}
