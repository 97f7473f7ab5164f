package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kballard/go-shellquote"
	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/streamjson"
	"github.com/qkit-cli/qkit/internal/structured"
)

// The --output-format values.
const (
	formatText       = "text"
	formatJSON       = "json"
	formatStreamJSON = "stream-json"
)

// askEventOptions are ask's flags for the ACP backend, the output formats and permissions.
type askEventOptions struct {
	outputFormat   string
	denyTools      []string
	onPermission   string
	backend        string
	refreshBackend bool
	session        string
	formatSet      bool // --output-format was given (not its default)
}

// askEventsHelp is the part of ask's help about backends, formats and permissions.
const askEventsHelp = `

Backends (agent.backend, or --backend): chat runs q chat --no-interactive and reads its text; acp
runs <agent.command> acp (kiro-cli 1.25 or later) and speaks the Agent Client Protocol with it, so
tool calls, plans, permissions and usage arrive as typed events; auto (the default) uses acp when
the agent answers initialize, learned once per agent binary (--refresh-backend probes again).

--output-format stream-json writes one JSON object per line as things happen (message, thought,
tool_call, tool_call_update, plan, permission_requested, permission_decided, usage), then a result
object {type:"result", backend, session_id, stop_reason, output, exit_code, agent_exit_code,
duration_ms, usage, tools, denied, refused_paths, refused_requests}. The format is documented by
the JSON Schema in internal/streamjson/stream-json.schema.json. Both backends write it; chat knows fewer events.

Permissions (acp backend): --yolo and --trust-tools allow, --deny-tools refuses (and wins); a tool
no flag covers goes by --on-permission: fail (the default without a terminal) stops with exit 1
naming the tool and the flag that trusts it; deny refuses it and the agent carries on; ask puts it
to a person through qkit questions (qkit questions wait / answer: allow once, allow always for this
run, or reject); the wait for that answer does not count toward --timeout (questions.timeout
bounds it). On a terminal the default is to ask there. Tools are named by the agent's name,
their ACP kind (execute, edit, read...) or the usual names for it (shell, write, read); an MCP
tool by @server/tool (the name the agent trusts), server/tool or @server.
The agent's file and terminal requests are served inside the working directory only; a path
outside it is refused and reported (refused_paths), and the run fails (exit 1) with the reply kept,
even when the agent carried on without it. Reads there are served; a file write
(fs/write_text_file) or a command (terminal/create) only when this run's policy allows it, whether
the agent asked first or not: a permission granted in this turn for the tool call it belongs to
(an edit for a write, an execute for a command, while that call runs), --yolo, --trust-tools
naming its kind (write or edit; shell or execute), or an allow-always for that kind; --deny-tools
refuses it whatever else. Anything else is refused with an error to the agent and listed in
refused_requests; under --on-permission fail the run then fails (exit 1), naming the flag that
allows it.

What a command can reach: qkit starts it in the working directory (or a folder inside it), in a
process group of its own that is stopped with the run, with qkit's environment and the variables
the agent adds. qkit limits where it starts, not what it does: it runs as you, and can read and
write every file you can, use the network, and start programs (one that leaves the process group
outlives the run). Allowing the shell (--yolo, --trust-tools shell, a yes to an execute tool)
allows all of that; the same holds for the tools an agent runs itself (kiro-cli's own engine does).

The chat backend cannot be asked: there --deny-tools leaves the tools it names out of
--trust-tools, so the agent refuses them and the run goes on as with deny (kiro-cli carries on
after a refusal; q stops, and that fails the run); --on-permission deny counts kiro-cli's
refusals the same way; --deny-tools with --yolo is refused (exit 2).`

func addAskEventFlags(c *cobra.Command, o *askEventOptions) {
	c.Long += askEventsHelp
	c.Example += `
  qkit ask --output-format stream-json --trust-tools read "Summarise README.md" | jq -c 'select(.type=="tool_call")'
  qkit ask --backend acp --on-permission ask "Fix the failing test"   # approve in: qkit questions wait
  qkit ask --trust-tools read --deny-tools shell,write --on-permission deny "Review the diff"
  qkit ask --session "$(qkit ask --json "Plan the change" | jq -r .session_id)" "Now make it"
  qkit ask --refresh-backend --json "hello" | jq -r .backend   # probe again after upgrading the agent`
	f := c.Flags()
	f.StringVar(&o.outputFormat, "output-format", formatText, "`FORMAT` of what is printed: text (the reply as it arrives), json (one object at the end, as --json), stream-json (one JSON object per line as things happen, then a result)")
	f.StringSliceVar(&o.denyTools, "deny-tools", nil, "refuse these `TOOLS` (wins over --yolo and --trust-tools): on the ACP backend whenever the agent asks; on chat they are left out of --trust-tools (not with --yolo)")
	f.StringVar(&o.onPermission, "on-permission", "", "what to do when the agent asks to run a tool no flag covers (ACP backend), `MODE` fail, deny or ask (through qkit questions); default: ask at the terminal, or fail when stdin is not one")
	f.StringVar(&o.backend, "backend", "", "`BACKEND` for this run: acp, chat or auto (default: agent.backend)")
	f.BoolVar(&o.refreshBackend, "refresh-backend", false, "with agent.backend=auto, probe the agent again instead of using what was learned about it")
	f.StringVar(&o.session, "session", "", "load this ACP session `ID` (the session_id of an earlier run; completion offers the last of each directory) instead of opening a new one; not with --resume")
	_ = c.RegisterFlagCompletionFunc("output-format", cobra.FixedCompletions([]string{formatText, formatJSON, formatStreamJSON}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("on-permission", cobra.FixedCompletions(approval.Modes, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions([]string{acpclient.BackendAuto, acpclient.BackendACP, acpclient.BackendChat}, cobra.ShellCompDirectiveNoFileComp))
}

// checkAskEventFlags validates the flags before anything runs; --json is --output-format json.
func checkAskEventFlags(opts *askOptions) error {
	o := &opts.events
	switch o.outputFormat {
	case formatText, formatJSON, formatStreamJSON:
	default:
		return output.UsageErrorf("invalid --output-format %q: expected text, json or stream-json", o.outputFormat)
	}
	if opts.asJSON && o.formatSet && o.outputFormat != formatJSON {
		return output.UsageErrorf("--json and --output-format %s contradict each other: --json is --output-format json", o.outputFormat)
	}
	if opts.dryRun && o.outputFormat == formatStreamJSON {
		return output.UsageErrorf("--dry-run runs nothing, so it has no events for --output-format stream-json: use --output-format json (or --json) for it as one object")
	}
	if o.session != "" && opts.resume {
		return output.UsageErrorf("--session and --resume contradict each other: --session loads the session it names, --resume this directory's last one; give one")
	}
	if opts.asJSON {
		o.outputFormat = formatJSON
	}
	if o.outputFormat == formatJSON {
		opts.asJSON = true
	}
	if o.onPermission != "" && !slices.Contains(approval.Modes, o.onPermission) {
		return output.UsageErrorf("invalid --on-permission %q: expected fail, deny or ask", o.onPermission)
	}
	switch o.backend {
	case "", acpclient.BackendAuto, acpclient.BackendACP, acpclient.BackendChat:
	default:
		return output.UsageErrorf("invalid --backend %q: expected auto, acp or chat", o.backend)
	}
	return nil
}

// askBackend resolves the backend of this run (--backend, else agent.backend).
func askBackend(ctx context.Context, a *app.App, opts *askOptions, l agent.Limits) (acpclient.BackendChoice, error) {
	setting := opts.events.backend
	if setting == "" {
		setting = config.AgentBackend.Get(a.Config)
	}
	if opts.events.session != "" && setting == acpclient.BackendChat {
		return acpclient.BackendChoice{}, output.UsageErrorf("--session loads an ACP session: it needs the acp backend, not %s", setting)
	}
	choice, err := acpclient.ChooseBackend(ctx, setting, l.Command, acpclient.BackendCacheFile(a.Config.Paths.State), opts.events.refreshBackend, l.Logger)
	if err != nil {
		return choice, err
	}
	if opts.events.session != "" && choice.Backend != acpclient.BackendACP {
		return choice, output.Errorf(output.ExitFailure, "--session needs an agent that speaks ACP, and %s does not (%s)", l.Command, choice.Reason)
	}
	return choice, nil
}

// runAskEvents runs ask over the backend's events, in every format, on both backends. l and r are
// ready (context prepended, validated).
func runAskEvents(ctx context.Context, a *app.App, opts *askOptions, l agent.Limits, r agent.Request, backend string) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	format := opts.events.outputFormat
	var stream *streamjson.Writer
	var text *streamOut
	switch format {
	case formatStreamJSON:
		stream = streamjson.NewWriter(a.IO.Out)
		stream.OnError = func(error) { cancel() }
	case formatText:
		if opts.structured.schema == nil { // --schema prints the validated JSON only, at the end
			text = newStreamOut(a.IO.Out, l.MaxResponseSize, cancel)
		}
	}
	sx := newAskStructuredRun(a, opts) // ask_structured.go: --schema, budgets, -o

	onEvent := func(ev agent.Event) {
		if stream != nil {
			stream.Event(ev)
		}
		switch ev.Type {
		case agent.EventMessage:
			if text != nil {
				text.chunk([]byte(ev.Text))
			}
		case agent.EventUsage:
			sx.credits(ev.Usage.Credits)
		case agent.EventToolCall:
			if a.IO.StderrTTY && format == formatText {
				fmt.Fprintf(a.IO.ErrOut, "qkit: tool: %s\n", approval.Label(*ev.Tool))
			}
		}
	}

	run := askrun.Run{Backend: backend, Timeout: l.Timeout, Started: time.Now()}
	var denied, unasked func() []string
	var unaskedErr func() error
	if backend == acpclient.BackendACP {
		dir, err := a.WorkingDir()
		if err != nil {
			return err
		}
		session := opts.events.session
		if session == "" && r.Resume {
			if session = acpclient.LastSession(sessionsFile(a), dir); session == "" {
				return output.NotFoundf("--resume: no ACP session was saved for %s: run qkit ask there without --resume first", dir)
			}
		}
		policy, err := askPolicy(a, opts, r)
		if err != nil {
			return err
		}
		denied, unasked, unaskedErr = policy.Denied, policy.Refused, policy.Err
		if len(opts.events.denyTools) > 0 {
			// The agent would not ask about what it trusts itself: qkit decides everything.
			r.TrustAll, r.TrustTools = false, nil
		}
		run.Refused = &acpclient.Refusals{}
		onRefused := func(e *acpclient.OutsideError) {
			a.Warnf("%v", e)
			run.Refused.Add(e)
		}
		terms := &acpclient.DirTerminals{Root: dir, Logger: l.Logger, OnRefused: onRefused}
		defer terms.Close()
		r.Dir = dir
		sx.send = func(ctx context.Context, prompt string, attempt int) (string, error) {
			r.Prompt = prompt
			ares, err := acpclient.Run(ctx, acpclient.RunOptions{
				Limits: l, Request: r, SessionID: session, ClientVersion: a.Version.Version, OnEvent: onEvent, Permission: policy.Decide,
				Files: &acpclient.DirFiles{Root: dir, OnRefused: onRefused}, Terminals: terms, Access: policy.Access,
			})
			run.Err, run.Agent = err, ares.Result
			run.SessionID, run.StopReason, run.Usage = ares.SessionID, ares.StopReason, sx.usage(ares.Usage)
			if ares.SessionID != "" {
				session = ares.SessionID // a retry goes to the same session (session/load)
				rememberSession(a, dir, ares.SessionID)
			}
			return ares.Body(), err
		}
	} else {
		sx.send = func(ctx context.Context, prompt string, attempt int) (string, error) {
			r.Prompt, r.Resume = prompt, r.Resume || attempt > 1 // a retry resumes the conversation
			run.Agent, run.Err = agent.Stream(ctx, l, r, onEvent)
			run.StopReason = "end_turn"
			// kiro-cli refused what --deny-tools (or --on-permission deny) asked it to refuse, and
			// carried on: that is the run the user asked for, as on the ACP backend.
			if labels, ok := approval.ChatRefusals(run.Err, opts.events.denyTools, opts.events.onPermission); ok {
				run.Err, denied = nil, func() []string { return labels }
			}
			return run.Agent.Body(), run.Err
		}
	}
	sx.run(runCtx, r.Prompt, stream, &run)
	agentRes, body := run.Agent, run.Agent.Body()
	if text != nil {
		if text.err != nil {
			return output.Errorf(output.ExitFailure, "writing the reply: %v; the agent was stopped", text.err)
		}
		// A cut reply ends with a line break, like every line a shell reads.
		text.finish(body, a.IO.StdoutTTY || agentRes.Truncated)
	}

	if stream != nil && stream.Err() != nil {
		return output.Errorf(output.ExitFailure, "writing the events: %v; the agent was stopped", stream.Err())
	}

	// How the run ended, as ask reports it (the same codes as the text path).
	run.Interrupted = ctx.Err() != nil
	if denied != nil {
		run.Denied = denied()
	}
	if unasked != nil {
		run.Unasked, run.UnaskedErr = unasked(), unaskedErr()
	}
	res, exitErr := askrun.Report(run)
	exitErr = sx.report(&res, exitErr) // --schema's answer and errors, the budget
	if len(res.Denied) > 0 {
		a.Warnf("refused: %s", strings.Join(res.Denied, ", "))
	}
	if len(res.RefusedRequests) > 0 {
		a.Warnf("refused what the agent did without a permission: %s", strings.Join(res.RefusedRequests, ", "))
	}
	if res.StopReason == "refusal" {
		a.Warnf("the agent ended its turn after a refusal (stop reason: refusal)")
	}

	switch format {
	case formatStreamJSON:
		if err := stream.Result(res); err != nil && exitErr == nil {
			return output.Errorf(output.ExitFailure, "writing the result: %v", err)
		}
	case formatJSON:
		if err := output.JSON(a.IO.Out, askEventsJSON{
			askJSON: askJSON{
				Output: body, Truncated: agentRes.Truncated, OriginalSize: agentRes.OriginalSize, TimedOut: agentRes.TimedOut,
				ExitCode: agentRes.ExitCode, DurationMS: agentRes.Duration.Milliseconds(), Stderr: agentRes.Stderr,
			},
			Backend: backend, SessionID: res.SessionID, StopReason: res.StopReason, Usage: res.Usage,
			Tools: res.Tools, Denied: res.Denied, RefusedPaths: res.RefusedPaths, RefusedRequests: res.RefusedRequests,
			StructuredOutput: res.StructuredOutput, Attempts: res.Attempts,
		}); err != nil {
			return err
		}
	case formatText:
		sx.printText(exitErr)
	}
	if err := sx.writeFile(exitErr, body); err != nil {
		return err
	}
	if agentRes.Truncated {
		a.Warnf("response truncated: the agent sent %d bytes, %d were kept (--max-response-size, AGENT_MAX_RESPONSE_SIZE)", agentRes.OriginalSize, len(body))
	}
	return exitErr
}

// askEventsJSON is the --json object, on both backends (the ACP-only fields are left out on chat).
type askEventsJSON struct {
	askJSON
	Backend         string                   `json:"backend"`
	SessionID       string                   `json:"session_id,omitempty"`
	StopReason      string                   `json:"stop_reason"`
	Usage           *agent.Usage             `json:"usage,omitempty"`
	Tools           []streamjson.ToolSummary `json:"tools"`
	Denied          []string                 `json:"denied,omitempty"`
	RefusedPaths    []string                 `json:"refused_paths,omitempty"`
	RefusedRequests []string                 `json:"refused_requests,omitempty"`
	// StructuredOutput and Attempts: with --schema (ask_structured.go).
	StructuredOutput json.RawMessage      `json:"structured_output,omitempty"`
	Attempts         []structured.Attempt `json:"attempts,omitempty"`
}

// askPolicy builds the permission policy from the flags.
func askPolicy(a *app.App, opts *askOptions, r agent.Request) (*approval.Policy, error) {
	p := &approval.Policy{TrustAll: r.TrustAll, Trust: r.TrustTools, Deny: opts.events.denyTools, OnPermission: opts.events.onPermission}
	switch {
	case p.OnPermission == approval.Ask:
		store, err := questions.Open(a.Config, questions.Options{Logger: a.Logger})
		if err != nil {
			return nil, err
		}
		p.Asker = &approval.StoreAsker{Store: store, Timeout: config.QuestionsTimeout.Get(a.Config), Created: func(id string) {
			a.Errorf("the agent asks for permission: answer with qkit questions answer %s (or qkit questions wait; %s)", id, store.Location())
		}}
	case p.OnPermission == "" && a.IO.CanPrompt():
		pr, err := a.Prompt("--on-permission")
		if err != nil {
			return nil, err
		}
		p.OnPermission, p.Asker = approval.Ask, &approval.TerminalAsker{Prompter: pr, Out: a.IO.ErrOut}
	case p.OnPermission == "":
		p.OnPermission = approval.Fail
	}
	return p, nil
}

// askDryRunACP says whether --dry-run shows the ACP command line: when the backend is acp by flag
// or setting (a dry run starts nothing, so auto is not probed and shows chat's).
func askDryRunACP(a *app.App, opts *askOptions) bool {
	b := opts.events.backend
	if b == "" {
		b = config.AgentBackend.Get(a.Config)
	}
	return b == acpclient.BackendACP || opts.events.session != ""
}

// printDryRunACP prints the ACP command line and the prompt (sent in session/prompt, not argv).
func printDryRunACP(a *app.App, opts *askOptions, argv []string, prompt string) error {
	if opts.asJSON {
		return output.JSON(a.IO.Out, dryRunJSON{Argv: argv, Prompt: prompt})
	}
	_, err := fmt.Fprintf(a.IO.Out, "%s   (the prompt goes in session/prompt)\n\n%s\n", shellquote.Join(argv...), strings.TrimRight(prompt, "\n"))
	return err
}

// sessionsFileName is the file in the state folder where ask remembers each directory's last
// ACP session.
const sessionsFileName = "acp-sessions.json"

func sessionsFile(a *app.App) string { return filepath.Join(a.Config.Paths.State, sessionsFileName) }

// rememberSession keeps the last ACP session of each working directory, for ask --resume.
func rememberSession(a *app.App, dir, id string) {
	if err := acpclient.RememberSession(sessionsFile(a), dir, id); err != nil {
		a.Logger.Debug("could not remember the ACP session", "error", err)
	}
}
