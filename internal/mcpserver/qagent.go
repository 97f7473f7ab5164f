package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

// qAgentName is the tool's name, as MCP clients already configure it.
const qAgentName = "q-developer-agent"

// qAgentInput is the tool's parameters. The names are the ones clients already send.
type qAgentInput struct {
	Prompt        string `json:"prompt" jsonschema:"The instruction for Q Developer, passed as the prompt of q chat. File references with @ are not supported: name the files in the text instead."`
	Resume        bool   `json:"resume,omitempty" jsonschema:"Continue the previous conversation saved for the server's working directory (--resume)."`
	Agent         string `json:"agent,omitempty" jsonschema:"Context profile (agent) to use for the conversation (--agent)."`
	OverrideModel string `json:"override-model,omitempty"`
	YoloMode      bool   `json:"yolo-mode,omitempty" jsonschema:"Trust every tool Q wants to use without asking (--trust-all-tools). Without it, or trust-tools, a run that needs a tool fails."`
	TrustTools    string `json:"trust-tools,omitempty" jsonschema:"Comma-separated list of specific tools to trust (--trust-tools), e.g. fs_read,fs_write. MCP tools need their @server/ prefix."`
	Verbose       bool   `json:"verbose,omitempty" jsonschema:"Ask Q for detailed logging (--verbose); the logs are mixed into the reply."`
	SessionID     string `json:"session_id,omitempty" jsonschema:"Continue this qkit session: the session id an earlier call returned in its result's _meta (qkit/session_id), or any id (or unambiguous prefix) qkit sessions list shows for the server's folder. Not with resume."`
	// OutputSchema makes the call structured, as qkit ask --schema.
	OutputSchema map[string]any `json:"output_schema,omitempty" jsonschema:"A JSON Schema (draft 2020-12 unless its $schema names draft-07; $ref only inside it) whose root accepts only objects (type object: MCP's structuredContent is an object), the answer must be valid against: the agent is told to answer with one JSON document, asked again in the same session with the errors (twice at most), and the result carries the valid document as structuredContent, or isError with the errors and the last reply."`
}

const qAgentDescription = `Runs the Amazon Q Developer CLI (q chat --no-interactive) with a prompt and returns its reply as plain text
(the answer only: tool banners are reported in progress notifications, not in the result).
Q works in the MCP server's working directory and can read and change files there, run commands and use AWS,
within the file system permissions of the user running the server. Use it for code analysis, generation and
AWS-specific questions. Replies over the size limit (AGENT_MAX_RESPONSE_SIZE, default 2MB) are cut at a line
break with a notice; a run is stopped after AGENT_TIMEOUT seconds (default 180) and returns what Q printed
so far. Call qkit_help with tool_name "q-developer-agent" for examples and troubleshooting.`

const qAgentHelp = `Runs: <agent.command> chat --no-interactive [--resume] [--agent A] [--model M] [--trust-all-tools]
[--trust-tools=a,b] [--verbose] <prompt>, in the MCP server's working directory. With agent.backend
set to acp (not auto: the tool stays on chat then) it runs <agent.command> acp instead, as qkit ask
does: yolo-mode and trust-tools allow, any other tool the agent asks for fails the call naming the
trust-tools value that allows it, and its file and terminal requests stay inside the working directory.

With output_schema (a JSON Schema object) the prompt goes with an instruction to answer with one JSON
document valid against it, and the schema itself (as qkit ask --schema sends it: qkit help structured-output).
qkit takes the JSON from the reply (the whole reply, or its one fenced block) and validates it; when it is not
valid it asks again in the same session (chat: --resume; acp: the same ACP session) with the errors, at most
twice. The result then carries the valid document as structuredContent (and as JSON text); when no answer was
valid, isError with the last answer's errors and the last reply. A schema that does not compile, that
refers to a file or URL ($ref outside itself), or whose root may accept something else than an object (MCP's
structuredContent is an object: say "type": "object", and put a list in a property), fails the call before
the agent runs.

Each call is kept in qkit's session store (qkit sessions list shows it, origin mcp), and its result carries
that session's id in _meta as "qkit/session_id" and in a last text block for the assistant, "[qkit session_id:
ID: ...]" (on an error result too, once the agent replied). Pass it back as
session_id to continue that conversation: on the chat backend the earlier turns go before the prompt (within
context.max_tokens), on acp the agent's own session is loaded. session_id also takes any id, or unambiguous
prefix, of qkit sessions list (an editor's session, an import) of the server's folder; an id the store does
not know, a session of another folder, or one whose folder is gone, fails the call before the agent runs.
resume instead goes on with the latest call's session in this folder.

Examples:
  Review code:
    {"prompt": "Review internal/agent/run.go for error handling problems and list them"}
    -> Q's review as plain text.
  Continue the last conversation in this directory:
    {"prompt": "Now apply the first fix", "resume": true, "trust-tools": "fs_read,fs_write"}
  Continue the conversation of an earlier call (its _meta "qkit/session_id"):
    {"prompt": "And what about the tests?", "session_id": "3f2a9c1e-..."}
  Pick a model and a profile:
    {"prompt": "Explain this repository's layout", "override-model": "claude-3.7-sonnet", "agent": "reviewer"}
  Let Q use every tool without asking:
    {"prompt": "Run the tests and fix what fails", "yolo-mode": true}
  Get data back, checked against a schema:
    {"prompt": "List the TODO comments in cmd/", "output_schema": {"type": "object", "required": ["todos"],
     "properties": {"todos": {"type": "array", "items": {"type": "string"}}}}}
    -> structuredContent {"todos": [...]}, valid against output_schema.

Common patterns:
  - Ask for a review or an explanation first (no tools trusted), then resume with trust-tools to apply changes.
  - Trust only what a task needs: fs_read for analysis, fs_read,fs_write for edits, execute_bash to run commands.
  - Name files in the prompt: Q does not expand @file references.
  - For long jobs, raise AGENT_TIMEOUT in the server's environment; the client keeps waiting while qkit sends
    progress notifications (when it asked for them with a progress token): the first as soon as the agent
    prints its first line, then at most every 5 seconds, naming the tool the agent runs.

When not to use:
  - For a quick fact you already have, or when file references with @ are essential.

Troubleshooting:
  - "agent command "q" not found": install the Amazon Q Developer CLI, or point agent.command at the binary
    (qkit settings set agent.command kiro-cli, or QKIT_AGENT_COMMAND=/path/to/q in the server's environment).
  - Authentication errors ("please log in with q login"): run q login as the user that runs the MCP server;
    qkit does not handle AWS authentication.
  - "needed approval for tool X" (q) or "refused tool X, which is not trusted" (kiro-cli, which otherwise answers
    without the tool): call again with the trust-tools value the message gives (MCP tools as @server/tool), or
    yolo-mode. The reply made without the tool follows the message.
  - "failed after a partial reply": the agent reported an error (an expired login, a service error) after part
    of its reply; the partial reply follows the message.
  - "not logged in": run q login (or kiro-cli login, or set KIRO_API_KEY for kiro-cli) as the server's user.
  - "q-developer-agent tool is not enabled": set ENABLE_ADDITIONAL_TOOLS=q-developer-agent (or all) in the MCP
    server's environment, or qkit settings set tools.enabled q-developer-agent, and restart the server.
  - "[RESPONSE TRUNCATED: ...]": the reply exceeded AGENT_MAX_RESPONSE_SIZE (bytes, default 2MB); raise it or
    ask for a shorter answer.
  - "[TIMED OUT: ...]": the run exceeded AGENT_TIMEOUT (seconds, default 180); the partial reply is returned.
  - "no answer held JSON valid against output_schema": the agent answered in prose or with JSON that does not
    fit; the errors and the last reply follow. Make the prompt say which fields it wants, or loosen the schema.
  - "session_id X: no such session: see qkit sessions list": the id is not in this machine's store (qkit
    sessions import brings one from elsewhere); internal_command (command sessions, subcommand list) shows the ids.
  - "unknown model" or "Model 'X' does not exist": use a model the agent lists (qkit ask --list-models), or one of
    override-model's list when the agent.models setting gives one.`

func qAgentTool() Tool {
	return Tool{
		Name:     qAgentName,
		Optional: true,
		Help:     qAgentHelp,
		Add: func(s *mcp.Server, d *Deps) {
			mcp.AddTool(s, &mcp.Tool{
				Name:        qAgentName,
				Title:       "Amazon Q Developer agent",
				Description: qAgentDescription,
				InputSchema: qAgentSchema(d.App.Config),
				Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)},
			}, func(ctx context.Context, req *mcp.CallToolRequest, in qAgentInput) (*mcp.CallToolResult, any, error) {
				return runQAgent(ctx, d, req, in), nil, nil
			})
		},
	}
}

func qAgentSchema(c *config.Config) *jsonschema.Schema {
	schema, err := jsonschema.For[qAgentInput](nil)
	if err != nil {
		panic(err) // a programming error in qAgentInput
	}
	def := config.AgentModel.Get(c)
	if def == "" {
		def = "claude-sonnet-4"
	}
	p := schema.Properties["override-model"]
	models := config.AgentModels.Get(c)
	if len(models) == 0 {
		// An empty agent.models lets any model through (agent.Validate); an empty enum would refuse all.
		p.Description = fmt.Sprintf("Model to use (--model), any model the agent knows; %s (default).", def)
		return schema
	}
	for _, m := range models {
		p.Enum = append(p.Enum, m)
	}
	p.Description = fmt.Sprintf("Model to use (--model). Available models: %s; %s (default).",
		strings.Join(models, ", "), def)
	return schema
}

func runQAgent(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in qAgentInput) *mcp.CallToolResult {
	l := agent.LimitsFromConfig(d.App.Config)
	l.Logger = d.App.Logger.With("tool", qAgentName)
	if d.agentGrace > 0 {
		l.Grace = d.agentGrace
	}
	l.Clock = d.agentClock
	r := agent.Request{
		Prompt: in.Prompt, Resume: in.Resume, Agent: strings.TrimSpace(in.Agent), Model: strings.TrimSpace(in.OverrideModel),
		TrustAll: in.YoloMode, TrustTools: []string{in.TrustTools}, Verbose: in.Verbose,
	}
	var received atomic.Int64
	var mu sync.Mutex
	var tools []string // the tools the agent announced, for the heartbeats
	name := filepath.Base(l.Command)
	p := NewProgress(ctx, d, req, func(elapsed time.Duration) string {
		msg := fmt.Sprintf("%s has been running for %s; %d bytes of output so far", name, elapsed.Round(time.Second), received.Load())
		mu.Lock()
		defer mu.Unlock()
		if len(tools) > 0 {
			msg += "; tools used: " + strings.Join(tools, ", ")
		}
		return msg
	})
	dir, _ := d.App.WorkingDir()
	r.Dir = dir
	sch, err := qAgentOutputSchema(in.OutputSchema, p)
	if err == nil {
		err = askrun.OneSession(in.SessionID, in.Resume, "session_id", "resume")
	}
	if err != nil {
		p.Stop()
		return ErrorResult(err.Error())
	}
	run, err := askrun.Execute(ctx, askrun.Options{
		Structured: sch,
		Limits:     l, Request: r, Backend: qAgentBackend(d.App.Config), StateDir: d.App.Config.Paths.State,
		ClientVersion: d.App.Version.Version, Policy: &approval.Policy{TrustAll: r.TrustAll, Trust: r.TrustTools, OnPermission: approval.Fail, Flags: mcpTrustFlags},
		OnWarning: func(w string) { l.Logger.Warn(w) },
		// qkit sessions: each call is recorded (origin mcp); resume goes on with the tool's latest,
		// session_id with the stored session it names (an unknown one is an error).
		SessionID: strings.TrimSpace(in.SessionID), ResumeName: "resume",
		Sessions: &askrun.Sessions{Store: sessions.PathStore(sessions.Path(d.App.Config.Paths.Data)), Origin: sessions.OriginMCP, Prompt: in.Prompt,
			Continue: in.Resume, Chat: true, KnownOnly: true, Name: "session_id", Now: d.App.Now,
			HistoryBytes: sessionrec.HistoryBytes(int(config.ContextMaxTokens.Get(d.App.Config)))},
		OnEvent: func(e agent.Event) {
			switch e.Type {
			case agent.EventMessage:
				received.Add(int64(len(e.Text)))
				if line := firstLine(e.Text); line != "" {
					p.Update(name + ": " + line)
				}
			case agent.EventToolCall:
				mu.Lock()
				tools = append(tools, e.Tool.TrustName())
				mu.Unlock()
				p.Update(toolProgress(name, *e.Tool))
			}
		}})
	p.Stop()
	if err != nil { // nothing ran: a bad request, an unknown session
		return ErrorResult(err.Error())
	}
	res := qAgentResult(run, sch)
	if run.StoredSession != "" {
		res.Meta = mcp.Meta{qAgentSessionMeta: run.StoredSession}
		res.Content = append(res.Content, qAgentSessionBlock(run.StoredSession))
	}
	return res
}

// qAgentSessionBlock is the last content block of a result that has a session: the id where the
// model sees it (most clients show a model the content and nothing of _meta), for the assistant.
func qAgentSessionBlock(id string) *mcp.TextContent {
	return &mcp.TextContent{
		Text:        QAgentSessionPrefix + id + ": pass it as session_id to continue this conversation]",
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}},
	}
}

// QAgentSessionPrefix starts the text of the session block (qAgentSessionBlock).
const QAgentSessionPrefix = "[qkit session_id: "

// qAgentSessionMeta is the key of the result's _meta that carries the qkit session the call was
// recorded in (what session_id takes to continue it).
const qAgentSessionMeta = "qkit/session_id"

// qAgentResult is the tool's result for a run that happened.
func qAgentResult(run askrun.Run, sch *askrun.Structured) *mcp.CallToolResult {
	if run.Err != nil {
		return ErrorResult(qAgentError(run.Err, run.Agent))
	}
	run.TrustFlags = mcpTrustFlags
	if _, exitErr := askrun.Report(run); exitErr != nil && !run.Agent.TimedOut {
		if run.StructuredErr != nil && errors.Is(exitErr, run.StructuredErr) {
			return qAgentNoValidAnswer(run)
		}
		// A refusal the run ended with, or a path outside the folder (ACP): the reply follows.
		msg := exitErr.Error()
		if body := strings.TrimSpace(run.Agent.Body()); body != "" {
			msg += "\n\nOutput:\n" + run.Agent.Body()
		}
		return ErrorResult(msg)
	}
	if sch != nil {
		if run.Agent.TimedOut {
			return ErrorResult("q Developer run timed out before a valid answer; the partial reply follows\n\n" + run.Agent.Output)
		}
		res := TextResult(string(run.Structured.Output))
		res.StructuredContent = run.Structured.Output
		return res
	}
	return TextResult(run.Agent.Output)
}

// qAgentOutputSchema compiles the call's output_schema (nil: none); each answer that is not
// valid is said in a progress notification.
func qAgentOutputSchema(outSchema map[string]any, p *Progress) (*askrun.Structured, error) {
	if outSchema == nil {
		return nil, nil
	}
	data, err := json.Marshal(outSchema)
	if err != nil {
		return nil, fmt.Errorf("output_schema: %v", err)
	}
	sch, err := schema.Compile(data, "output_schema")
	if err != nil {
		return nil, fmt.Errorf("invalid %v", err)
	}
	if !sch.ObjectsOnly() {
		// MCP carries a structured result as an object (structuredContent): the official
		// TypeScript client rejects a whole result whose structuredContent is an array or a
		// string. Refused before the agent runs, not found out after it.
		return nil, errors.New(qAgentNotObject)
	}
	return &askrun.Structured{Schema: sch, Retries: structured.DefaultRetries, OnAttempt: func(a structured.Attempt) {
		if !a.Valid {
			p.Update(fmt.Sprintf("answer %d is not valid against output_schema: %s; asking again", a.Attempt, strings.Join(a.Problems, "; ")))
		}
	}}, nil
}

// qAgentNotObject refuses an output_schema whose root may accept something else than an object.
const qAgentNotObject = `invalid schema output_schema: its root must accept only a JSON object ("type": "object"), as MCP carries the ` +
	`result as an object (structuredContent); for a list or a single value, make it a property, e.g. ` +
	`{"type":"object","properties":{"items":{"type":"array"}},"required":["items"]}`

// qAgentNoValidAnswer is the error result of a structured call whose answers were never valid:
// the last one's errors, then the last reply.
func qAgentNoValidAnswer(run askrun.Run) *mcp.CallToolResult {
	msg := run.StructuredErr.Error()
	var nv *structured.NoValidAnswerError
	if errors.As(run.StructuredErr, &nv) {
		msg = fmt.Sprintf("no answer held JSON valid against output_schema after %d answers; the last one's errors:\n- %s",
			nv.Attempts, strings.Join(nv.Problems, "\n- "))
	}
	if reply := strings.TrimSpace(run.Structured.Reply); reply != "" {
		msg += "\n\nThe last reply:\n" + run.Structured.Reply
	}
	return ErrorResult(msg)
}

// qAgentBackend is the tool's backend: chat (q chat --no-interactive, whose text the tool returns),
// unless agent.backend is acp. auto stays on chat here: the tool predates the ACP backend and its
// clients expect the chat runner's behaviour; acp serve and ask are where auto probes.
func qAgentBackend(c *config.Config) string {
	if config.AgentBackend.Get(c) == acpclient.BackendACP {
		return acpclient.BackendACP
	}
	return acpclient.BackendChat
}

// firstLine is the first non-blank line of text, cut to a length a progress message can carry.
func firstLine(text string) string {
	for line := range strings.Lines(text) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = strings.ToValidUTF8(line[:200], "") + "…"
			}
			return line
		}
	}
	return ""
}

// toolProgress says which tool the agent runs.
func toolProgress(name string, t agent.ToolCall) string {
	msg := name + " is running tool " + t.Name
	if t.Server != "" {
		msg += " from MCP server " + t.Server
	}
	if !t.Trusted {
		msg += " (not trusted)"
	}
	return msg
}

// mcpTrustFlags are the tool's parameters that trust tools, for the approval hint.
var mcpTrustFlags = agent.TrustFlags{ByName: "trust-tools", All: "yolo-mode true"}

// qAgentError words a failed run for the assistant: what happened and what to change.
func qAgentError(err error, res agent.Result) string {
	msg := "q Developer command failed: " + err.Error()
	// On the ACP backend the policy's own errors word their hint in the tool's parameters
	// (approval.Policy.Flags).
	var ut *agent.UntrustedToolError
	switch {
	case errors.Is(err, context.Canceled):
		msg = "q Developer run cancelled by the client; the agent's process group was stopped"
	case errors.As(err, &ut):
		msg += "; " + ut.Hint(mcpTrustFlags)
	}
	if body := strings.TrimSpace(res.Body()); body != "" && !errors.Is(err, context.Canceled) {
		msg += "\n\nOutput before the failure:\n" + res.Body()
	}
	return msg
}
