package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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

func addAskEventFlags(c *cobra.Command, o *askEventOptions) {
	f := c.Flags()
	f.StringVar(&o.outputFormat, "output-format", formatText, "`FORMAT`: text, json or stream-json (events)")
	f.StringSliceVar(&o.denyTools, "deny-tools", nil, "refuse these `TOOLS` (a,b); wins over --yolo and --trust-tools")
	f.StringVar(&o.onPermission, "on-permission", "", "for a tool no flag covers: `MODE` fail, deny or ask (a person)")
	f.StringVar(&o.backend, "backend", "", "`BACKEND` for this run: acp, chat or auto (default: agent.backend)")
	f.BoolVar(&o.refreshBackend, "refresh-backend", false, "probe the agent again instead of using what auto learned")
	f.StringVar(&o.session, "session", "", "continue session `ID` (qkit's, or the agent's own); not with --resume")
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
	if err := askrun.OneSession(o.session, opts.resume, "--session", "--resume"); err != nil {
		return err
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

// runAskEvents runs ask (askrun.Execute) and prints it in the chosen format: the reply as it
// arrives (text), the events as they happen (stream-json), or one object at the end (json).
func runAskEvents(ctx context.Context, a *app.App, opts *askOptions, o askrun.Options) error {
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
			text = newStreamOut(a.IO.Out, o.Limits.MaxResponseSize, cancel)
		}
	}
	o.Structured = askStructured(a, &opts.structured, stream) // ask_structured.go
	o.OnEvent = func(ev agent.Event) { askEvent(a, format, stream, text, ev) }
	run, err := askrun.Execute(runCtx, o)
	if err != nil {
		if ctx.Err() != nil && runCtx.Err() != nil {
			return askrun.Interrupted()
		}
		return err
	}
	run.Interrupted = ctx.Err() != nil // ask's own context: a failed write is not an interrupt
	agentRes, body := run.Agent, run.Agent.Body()
	if text != nil {
		if text.err != nil {
			return output.Errorf(output.ExitFailure, "writing the reply: %v; the agent was stopped", text.err)
		}
		text.finish(body, a.IO.StdoutTTY || agentRes.Truncated) // a cut reply ends with a line break
	}
	if stream != nil && stream.Err() != nil {
		return output.Errorf(output.ExitFailure, "writing the events: %v; the agent was stopped", stream.Err())
	}
	res, exitErr := askrun.Report(run)
	askWarnings(a, res)
	switch format {
	case formatStreamJSON:
		if err := stream.Result(res); err != nil && exitErr == nil {
			return output.Errorf(output.ExitFailure, "writing the result: %v", err)
		}
	case formatJSON:
		if err := output.JSON(a.IO.Out, newAskEventsJSON(run, res)); err != nil {
			return err
		}
	case formatText:
		askStructuredText(a, &opts.structured, run, exitErr)
	}
	if err := askOutputFile(&opts.structured, run, exitErr); err != nil {
		return err
	}
	if agentRes.Truncated {
		a.Warnf("response truncated: the agent sent %d bytes, %d were kept (--max-response-size, AGENT_MAX_RESPONSE_SIZE)", agentRes.OriginalSize, len(body))
	}
	return exitErr
}

// askEvent prints one event of the run as it happens.
func askEvent(a *app.App, format string, stream *streamjson.Writer, text *streamOut, ev agent.Event) {
	if stream != nil {
		stream.Event(ev)
	}
	switch {
	case ev.Type == agent.EventMessage && text != nil:
		text.chunk([]byte(ev.Text))
	case ev.Type == agent.EventToolCall && a.IO.StderrTTY && format == formatText:
		fmt.Fprintf(a.IO.ErrOut, "qkit: tool: %s\n", approval.Label(*ev.Tool))
	}
}

// askWarnings says on stderr what the run refused.
func askWarnings(a *app.App, res streamjson.Result) {
	if len(res.Denied) > 0 {
		a.Warnf("refused: %s", strings.Join(res.Denied, ", "))
	}
	if len(res.RefusedRequests) > 0 {
		a.Warnf("refused what the agent did without a permission: %s", strings.Join(res.RefusedRequests, ", "))
	}
}

// newAskEventsJSON is the --json object of a run.
func newAskEventsJSON(run askrun.Run, res streamjson.Result) askEventsJSON {
	r := run.Agent
	return askEventsJSON{
		askJSON: askJSON{
			Output: r.Body(), Truncated: r.Truncated, OriginalSize: r.OriginalSize, TimedOut: r.TimedOut,
			ExitCode: r.ExitCode, DurationMS: r.Duration.Milliseconds(), Stderr: r.Stderr,
		},
		Backend: run.Backend, SessionID: res.SessionID, StopReason: res.StopReason, Usage: res.Usage,
		Tools: res.Tools, Denied: res.Denied, RefusedPaths: res.RefusedPaths, RefusedRequests: res.RefusedRequests,
		StructuredOutput: res.StructuredOutput, Attempts: res.Attempts,
	}
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

// askAsker completes the policy on the ACP backend: --on-permission ask puts a request in the
// questions store; without --on-permission, a person at a terminal is asked there (else fail).
func askAsker(a *app.App, p *approval.Policy) error {
	switch {
	case p.OnPermission == approval.Ask:
		store, err := questionStores().Open(a.Config, questions.Options{Logger: a.Logger})
		if err != nil {
			return err
		}
		p.Asker = &approval.StoreAsker{Store: store, Timeout: config.QuestionsTimeout.Get(a.Config), Created: func(id string) {
			a.Errorf("the agent asks for permission: answer with qkit questions answer %s (or qkit questions wait; %s)", id, store.Location())
		}}
	case p.OnPermission == "" && a.IO.CanPrompt():
		pr, err := a.Prompt("--on-permission")
		if err != nil {
			return err
		}
		p.OnPermission, p.Asker = approval.Ask, &approval.TerminalAsker{Prompter: pr, Out: a.IO.ErrOut}
	}
	return nil
}
