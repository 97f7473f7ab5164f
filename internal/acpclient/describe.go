package acpclient

import (
	"context"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
)

// Description is what an agent said about itself in initialize, in words, for `qkit doctor`.
type Description struct {
	// Agent is its agentInfo name and version ("Kiro CLI Agent 2.0.1"); empty when it gave none.
	Agent string
	// Protocol is the protocol version it answered with.
	Protocol int
	// Capabilities are the optional capabilities it advertised ("session/load", "images",
	// "MCP over HTTP", ...), in a fixed order.
	Capabilities []string
	// AuthMethods are the ids of the auth methods it listed.
	AuthMethods []string
}

// Describe starts the agent in ACP mode as a run would (`<command> acp`, or an ACP agent's
// command line as given: agent.Describe), initializes it, stops it again and says what it
// answered. ctx bounds the start-up; grace is the agent's time to exit once its stdin closes (see
// Options.Grace). The errors are Start's: an agent that answers but is not logged in is an
// *agent.LoginError, one that does not speak ACP a *NotACPError.
func Describe(ctx context.Context, command, clientVersion string, grace time.Duration) (Description, error) {
	d := agent.Describe(command)
	argv := d.ACPArgv("", "", false, nil)
	c, err := Start(ctx, Options{Command: argv[0], Args: argv[1:], Agent: d, Grace: grace, ClientVersion: clientVersion})
	if err != nil {
		return Description{}, err
	}
	defer c.Close()
	return describe(c.Info()), nil
}

func describe(r acp.InitializeResponse) Description {
	d := Description{Agent: agentName(r), Protocol: int(r.ProtocolVersion)}
	ac := r.AgentCapabilities
	for _, f := range []struct {
		on   bool
		name string
	}{
		{ac.LoadSession, "session/load"},
		{ac.SessionCapabilities.List != nil, "session/list"},
		{ac.SessionCapabilities.Resume != nil, "session/resume"},
		{ac.SessionCapabilities.Close != nil, "session/close"},
		{ac.PromptCapabilities.Image, "images"},
		{ac.PromptCapabilities.Audio, "audio"},
		{ac.PromptCapabilities.EmbeddedContext, "embedded context"},
		{ac.McpCapabilities.Http, "MCP over HTTP"},
		{ac.McpCapabilities.Sse, "MCP over SSE"},
	} {
		if f.on {
			d.Capabilities = append(d.Capabilities, f.name)
		}
	}
	for _, m := range r.AuthMethods {
		switch {
		case m.Agent != nil:
			d.AuthMethods = append(d.AuthMethods, m.Agent.Id)
		case m.Terminal != nil:
			d.AuthMethods = append(d.AuthMethods, m.Terminal.Id)
		case m.EnvVar != nil:
			d.AuthMethods = append(d.AuthMethods, m.EnvVar.Id)
		}
	}
	return d
}
