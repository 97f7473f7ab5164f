// Package mcpserver serves qkit's MCP tools on github.com/modelcontextprotocol/go-sdk. It is a thin
// adapter: each tool converts its input to a call into a core package and the result back.
//
// # Adding a tool
//
// Write the tool in its own file as a function returning a [Tool], and add one line for it to
// [registry]:
//
//	func questionsTool() Tool {
//		return Tool{
//			Name: "ask_user_questions",
//			Help: questionsHelp, // examples, common patterns, troubleshooting (plain text)
//			Add: func(s *mcp.Server, d *Deps) {
//				mcp.AddTool(s, &mcp.Tool{Name: "ask_user_questions", Description: "..."}, handler(d))
//			},
//		}
//	}
//
// Add must register exactly one tool, named Name. A tool that needs more than the App adds a field
// to [Deps]. An Optional tool is registered only when the user enabled it (tools.enabled or
// ENABLE_ADDITIONAL_TOOLS, see config.Config.ToolEnabled); while it is disabled it is not listed,
// and a call by name gets a tool error (isError) saying how to enable it.
//
// Tool failures are results with isError set, never protocol errors: return an error from a
// mcp.ToolHandlerFor, or a result built with [ErrorResult]. Long calls report progress with
// [NewProgress] (a no-op unless the client sent a progress token). Nothing may write to stdout: it carries
// the protocol; log through Deps.App.Logger (stderr).
//
// # Testing a tool
//
// Package mcptest connects the SDK's own client to a server in memory. Tests that use it are in
// package mcpserver_test (mcptest imports mcpserver, so an internal test file cannot import it):
//
//	a := mcptest.NewApp(t, map[string]string{"ENABLE_ADDITIONAL_TOOLS": "q-developer-agent"})
//	cs := mcptest.Connect(t, &mcpserver.Deps{App: a})
//	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{}})
package mcpserver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/commands"
	"github.com/qkit-cli/qkit/internal/questions"
)

// Deps is what tools need from the process. Tools read it; nothing writes it after NewServer.
type Deps struct {
	// App holds the configuration, the logger (stderr) and the version.
	App *app.App
	// ProgressEvery is how often long calls send progress notifications; 0 means 5 seconds.
	ProgressEvery time.Duration
	// Commands is the internal-command registry behind internal_command (cmd.InternalRegistry).
	Commands *commands.Registry
	// QuestionStores are the question stores the binary links, chosen by questions.store
	// (cmd's questionStores); nil means the file store alone.
	QuestionStores questions.Kinds

	// agentGrace, when set, is agent.Limits.Grace of the agent runs (0: the agent packages' own).
	// Only tests set it (SetAgentGrace in export_test.go), for agents that never end on their own.
	agentGrace time.Duration
	// agentClock, when set, is agent.Limits.Clock of the agent runs (nil: the real clock). Only
	// tests set it (SetAgentClock in export_test.go), to pass a run's timeout once the agent's
	// partial reply is out instead of waiting for it.
	agentClock agent.Clock
}

// Tool is one entry of the registry.
type Tool struct {
	// Name is the tool's MCP name, exactly as Add registers it.
	Name string
	// Optional tools are registered only when enabled through config.Config.ToolEnabled.
	Optional bool
	// Help is the extended help: examples, common patterns and troubleshooting, as plain text. It is
	// served by the qkit_help tool and printed by `qkit mcp tools help NAME`.
	Help string
	// Add registers the tool (definition and handler) on s.
	Add func(s *mcp.Server, d *Deps)
}

// registry lists every tool qkit can serve, one line each.
func registry() []Tool {
	return []Tool{
		helpTool(),
		qAgentTool(),
		internalCommandTool(),
		questionsTool(),
	}
}

// Registry returns every tool qkit can serve, enabled or not, sorted by name.
func Registry() []Tool {
	tools := registry()
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools
}

// Lookup finds a registered tool by name.
func Lookup(name string) (Tool, bool) {
	for _, t := range registry() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Enabled reports whether t is served under the configuration in d.
func (d *Deps) Enabled(t Tool) bool {
	return !t.Optional || d.App.Config.ToolEnabled(t.Name)
}

// Instructions is what the server tells clients at initialisation.
const Instructions = `qkit connects assistants to the Amazon Q Developer CLI (q, or kiro-cli).
Tool failures come back as results with isError set and a message that says what to do.
Call qkit_help with a tool name for examples, common patterns and troubleshooting.
Optional tools (such as q-developer-agent) are listed only when the user enabled them with
ENABLE_ADDITIONAL_TOOLS or the tools.enabled setting.`

// NewServer returns a server with every enabled tool registered. Server logs go to d.App.Logger.
func NewServer(d *Deps) *mcp.Server {
	return newServer(d, false)
}

func newServer(d *Deps, all bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "qkit", Title: "qkit", Version: d.App.Version.Version},
		&mcp.ServerOptions{Instructions: Instructions, Logger: d.App.Logger})
	for _, t := range registry() {
		if all || d.Enabled(t) {
			t.Add(s, d)
		}
	}
	s.AddReceivingMiddleware(gateDisabled(d))
	return s
}

// Serve runs the server on t until the client disconnects or ctx is done. When ctx is done (SIGTERM,
// Ctrl-C), calls still running are cancelled (an agent run stops its process group) and Serve returns
// once they have.
//
// It is the SDK's Server.Run without its ERROR log for a cancelled run: being stopped by a signal is
// how a server normally ends, so it is logged at INFO.
func Serve(ctx context.Context, d *Deps, t mcp.Transport) error {
	d.App.Logger.Info("mcp server starting", "version", d.App.Version.Version, "tools", strings.Join(enabledNames(d), ","))
	s := NewServer(d)
	s.AddReceivingMiddleware(cancelWith(ctx))
	ss, err := s.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-closed
		d.App.Logger.Info("mcp server stopped", "reason", context.Cause(ctx))
		return nil
	case err := <-closed:
		d.App.Logger.Info("mcp session ended")
		return err
	}
}

// cancelWith cancels every request handler when ctx is done. (The SDK's handler contexts outlive the
// context given to Run, and Run waits for the handlers.)
func cancelWith(ctx context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(hctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			hctx, cancel := context.WithCancel(hctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			return next(hctx, method, req)
		}
	}
}

func enabledNames(d *Deps) []string {
	var names []string
	for _, t := range Registry() {
		if d.Enabled(t) {
			names = append(names, t.Name)
		}
	}
	return names
}

// gateDisabled answers a call to a registered but disabled optional tool with a tool error that
// says how to enable it, instead of the SDK's "unknown tool" protocol error.
func gateDisabled(d *Deps) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
					if t, ok := Lookup(call.Params.Name); ok && !d.Enabled(t) {
						d.App.Logger.Warn("call to disabled tool", "tool", t.Name)
						return ErrorResult(NotEnabledMessage(t.Name)), nil
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// NotEnabledMessage says exactly how to enable an optional tool.
func NotEnabledMessage(name string) string {
	return fmt.Sprintf("%s tool is not enabled. Set ENABLE_ADDITIONAL_TOOLS environment variable to include '%s' "+
		"(for example ENABLE_ADDITIONAL_TOOLS=%s in the MCP server's environment), or add it to the tools.enabled "+
		"setting (qkit settings set tools.enabled %s), then restart the MCP server.", name, name, name, name)
}

// TextResult is a successful plain-text result.
func TextResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// ErrorResult is a tool error (isError) carrying msg as its text.
func ErrorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// Entry describes one tool for `qkit mcp tools`.
type Entry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Optional    bool   `json:"optional"`
	Enabled     bool   `json:"enabled"`
}

// Catalog lists every tool with its description and whether it is enabled, sorted by name. It reads
// the descriptions from a server that has every tool registered, through an in-memory client, so
// they are exactly what a client sees.
func Catalog(ctx context.Context, d *Deps) ([]Entry, error) {
	s := newServer(d, true)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "qkit-catalog", Version: d.App.Version.Version}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	desc := map[string]string{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		desc[tool.Name] = tool.Description
	}
	var out []Entry
	for _, t := range Registry() {
		out = append(out, Entry{Name: t.Name, Description: desc[t.Name], Optional: t.Optional, Enabled: d.Enabled(t)})
	}
	return out, nil
}
