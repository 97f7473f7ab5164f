package acpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// maxApprovals bounds the permission round-trips of one turn (each approval re-runs the agent).
const maxApprovals = 8

// textTurns is the text path: each prompt runs `<agent> chat --no-interactive` through the agent
// runner, with the session's earlier turns and the context files in front of it. The runner's
// events become the editor's updates: the reply as agent_message_chunk (without the agent's "> "
// prefix and tool banners), each tool the agent announces as a tool_call titled with its name,
// ended by a tool_call_update (completed or failed).
type textTurns struct{ a *adapter }

func (t textTurns) prompt(ctx context.Context, in turnInput, p userPrompt, out *reply) (turnResult, []string) {
	var always []string
	var ran turnRuns
	res := t.a.runAgent(ctx, in, p.text, out, &always, &ran)
	res.tools, res.usage = sessions.ToolCallsOf(ran.tools), sessions.UsageOf(ran.usage)
	return res, always
}

// turnRuns is what the transcript keeps of a turn's runs: the tool calls of the run that gave
// the answer (an earlier run repeated with a tool allowed is not it), with the calls the editor
// refused marked denied, and the usage of all of them.
type turnRuns struct {
	tools []agent.ToolCall
	usage agent.Usage
}

// refused marks the last run's call of tool denied: the editor said no to it.
func (r *turnRuns) refused(tool agent.ToolCall) {
	for i := range r.tools {
		if r.tools[i].AgentTrustName() == tool.AgentTrustName() {
			r.tools[i].Denied = true
			return
		}
	}
	tool.Denied, tool.Status = true, agent.ToolFailed
	r.tools = append(r.tools, tool)
}

// permission outcomes.
type choice int

const (
	choiceReject choice = iota
	choiceAllowOnce
	choiceAllowAlways
	choiceCancelled
)

// runAgent runs the prompt, and runs it again each time the agent needed a tool it was not allowed
// (q stopped with its approval error; kiro-cli denied the tool and went on) and the editor allowed
// it: trusted under the agent's own name for it (@server/tool for an MCP tool).
func (a *adapter) runAgent(ctx context.Context, in turnInput, userText string, out *reply, always *[]string, ran *turnRuns) turnResult {
	// qkit's own words (a notice, a failure) go to the editor, never into the transcript: it
	// keeps the agent's reply and how the turn ended (sessionrec.Ending), as on every door.
	say := out.notice
	failBefore := func(err error) turnResult { // before the agent ran
		r := a.fail(ctx, say, err)
		r.ended = sessionrec.Ending(acpclient.BackendChat, "", false, r.stop == acp.StopReasonCancelled, true)
		return r
	}
	history, err := a.opts.Store.Messages(ctx, in.sessionID)
	if err != nil {
		return failBefore(err)
	}
	// As on every door that runs the agent afresh each turn (askrun.Sessions): the context files
	// with the prompt, within context.max_tokens, and the session's history before them.
	prompt := userText
	if a.opts.Context != nil {
		withFiles, warnings, err := a.opts.Context(in.cwd, max(a.opts.MaxTokens, 1), prompt)
		for _, w := range warnings {
			a.opts.Logger.Warn(w, "session", in.sessionID)
		}
		say(contextfiles.Notice(warnings)) // the editor's reader is told, as ask's is on stderr
		if err != nil {
			return failBefore(fmt.Errorf("context files: %w", err))
		}
		prompt = withFiles
	}
	prompt, _ = sessions.WithHistory(history, prompt, sessionrec.HistoryBytes(a.opts.MaxTokens))
	calls := &toolCalls{a: a, sessionID: in.sessionID, turn: in.turn, approved: map[string]acp.ToolCallId{}}
	trusted, trustAll := in.trusted, false
	var shown string // what the earlier runs of this turn streamed to the editor
	for attempt := 0; ; attempt++ {
		run := calls.newRun(out, shown)
		// The text path is the chat backend always: the editor is asked between runs.
		run1, err := askrun.Execute(ctx, askrun.Options{
			Limits: a.opts.Limits, Backend: acpclient.BackendChat, OnEvent: run.event,
			Request: agent.Request{Prompt: prompt, Agent: a.opts.Agent, Model: in.model, Dir: in.cwd},
			Policy:  &approval.Policy{TrustAll: trustAll, Trust: trusted, OnPermission: approval.Fail},
		})
		res := run1.Agent
		if err == nil {
			err = run1.Err
		}
		ran.tools = res.Tools
		ran.usage.Add(run1.Usage)
		run.chunks.flush()
		var untrusted *agent.UntrustedToolError
		rerun := errors.As(err, &untrusted) && ctx.Err() == nil
		if rerun {
			// The reply without the tool is not the answer: the run repeats with it. The editor
			// keeps what it was sent, so the next run sends only what goes beyond it.
			shown = run.shown()
		} else {
			run.finish(res.Body())
		}
		// end ends the turn: the transcript keeps this run's reply as the runner kept it (not a
		// second copy), and how the turn ended, on the chat backend (the text path's).
		end := func(r turnResult, cancelled, failed bool) turnResult {
			out.record(res.Body())
			r.ended = sessionrec.Ending(acpclient.BackendChat, string(acp.StopReasonEndTurn), res.TimedOut, cancelled, failed)
			r.truncated = res.Truncated
			return calls.finish(r)
		}
		switch {
		case ctx.Err() != nil:
			return end(turnResult{stop: acp.StopReasonCancelled}, true, false)
		case res.TimedOut:
			say(res.Notice)
			return end(turnResult{stop: acp.StopReasonEndTurn}, false, false)
		case err == nil:
			say(res.Notice) // the runner's notice after the stream: truncation
			return end(turnResult{stop: acp.StopReasonEndTurn}, false, false)
		case !rerun:
			say(res.Notice)
			r := a.fail(ctx, say, err)
			return end(r, r.stop == acp.StopReasonCancelled, true)
		case attempt >= maxApprovals:
			say(fmt.Sprintf("\n\nStopped: %d tools in a row needed approval.\n", maxApprovals))
			return end(turnResult{stop: acp.StopReasonRefusal}, false, true)
		}
		seen := map[string]bool{}
		for _, tool := range untrusted.Tools {
			// The agent's own name, not the one shown: trusting the shown name would trust
			// another tool (or none), and the agent would need this one again.
			name := tool.AgentTrustName()
			if seen[name] {
				continue
			}
			seen[name] = true
			id := calls.pendingID(tool)
			if name != "" && !tool.Trustable() {
				// --trust-tools cannot carry its name: nothing the editor allows can let it run,
				// so it is not asked about.
				calls.end(id, acp.ToolCallStatusFailed)
				ran.refused(tool)
				say(fmt.Sprintf("\n\nThe agent's own name for the tool %s holds characters that --trust-tools cannot carry "+
					"(a control or escape sequence, a comma or a space), so it cannot be allowed by name; the turn ended without it.\n", toolLabel(tool)))
				return end(turnResult{stop: acp.StopReasonEndTurn}, false, true)
			}
			switch c := a.askPermission(ctx, in.sessionID, id, tool); c {
			case choiceCancelled:
				calls.end(id, acp.ToolCallStatusFailed)
				return end(turnResult{stop: acp.StopReasonCancelled}, true, false)
			case choiceReject:
				// Kept as the chat backend's run that stopped at a tool it may not use: failed,
				// with the call denied (the transcript names it).
				calls.end(id, acp.ToolCallStatusFailed)
				ran.refused(tool)
				say(fmt.Sprintf("\n\nPermission to use %s was refused, so the turn ended without it.\n", toolLabel(tool)))
				return end(turnResult{stop: acp.StopReasonEndTurn}, false, true)
			default:
				calls.approved[name] = id
				switch {
				case name == "":
					// The agent did not say which tool: the user allowed "the tool", so this one
					// run trusts all.
					trustAll = true
				case !slices.Contains(trusted, name):
					trusted = append(slices.Clone(trusted), name)
				}
				if c == choiceAllowAlways && name != "" {
					*always = append(*always, name)
				}
			}
		}
		calls.failHeld()
	}
}

// toolCalls reports a turn's tool calls to the editor across the runs of the turn.
type toolCalls struct {
	a         *adapter
	sessionID string
	turn      uint64
	n         int
	// open are the calls reported and not ended yet, by the editor's id.
	open []acp.ToolCallId
	// held are untrusted calls that ended failed in the last run, not reported yet: the run's
	// outcome says whether they are asked about (the agent needed them) or failed.
	held map[string]acp.ToolCallId // by the agent's trust name (AgentTrustName)
	// approved are calls the editor allowed, by the agent's trust name: the next run's call of that tool is
	// reported under the same id, so the editor sees the call it allowed run.
	approved map[string]acp.ToolCallId
}

// textRun is one run of the agent within a turn.
type textRun struct {
	c      *toolCalls
	out    *reply
	chunks utf8Chunks
	// before is what the earlier runs of the turn streamed: a run repeated with a tool allowed
	// starts with the same text, which the editor has already, so as long as the new text is the
	// same it is not sent again; where it differs, the rest is sent after a blank line.
	before string
	seen   strings.Builder           // this run's text, as the chunks give it
	ids    map[string]acp.ToolCallId // the runner's tool ids → the editor's
	tools  map[string]agent.ToolCall // the runner's tool ids → the call as announced
	denied bool                      // the agent refused a tool: what it says after is not the answer
	live   output.Live               // the run's text measured against the size cap
}

func (c *toolCalls) newRun(out *reply, before string) *textRun {
	c.held = map[string]acp.ToolCallId{}
	r := &textRun{c: c, out: out, before: before, live: output.NewLive(out.limit), ids: map[string]acp.ToolCallId{}, tools: map[string]agent.ToolCall{}}
	// Near the size cap the runner cuts at a line break it knows only later: what may be cut is
	// held back, and finish sends what the runner kept of it.
	r.chunks.emit = func(s string) { r.pass(s[:r.live.Show(s)]) }
	return r
}

// pass sends a run's text on to the editor, apart from what it has already.
func (r *textRun) pass(s string) {
	if r.denied || s == "" {
		return
	}
	done := r.seen.Len()
	r.seen.WriteString(s)
	switch {
	case done >= len(r.before):
		r.out.send(s) // past what the editor has
	case strings.HasPrefix(r.before[done:], s):
		// still the text the editor has
	case strings.HasPrefix(s, r.before[done:]):
		r.out.send(s[len(r.before)-done:]) // the rest of it is new
	default:
		// The repeated run says something else: its text so far, apart from the earlier one.
		r.before = ""
		r.out.send("\n\n" + r.seen.String())
	}
}

// finish sends what the runner kept of the run's text beyond what went out as it arrived: the
// editor ends with the same reply as the transcript, cut where the runner cut it.
func (r *textRun) finish(body string) {
	r.chunks.flush()
	if rest := r.live.Rest(body); rest != "" && strings.HasPrefix(body, r.seen.String()) {
		r.pass(rest) // the cut is made: the rest of the kept text goes out whole
	}
}

// shown is what the editor has been sent of the turn's text after this run: the earlier runs'
// text, or this run's when it went beyond it.
func (r *textRun) shown() string {
	if r.before != "" && r.seen.Len() < len(r.before) {
		return r.before
	}
	return r.seen.String()
}

// event turns one runner event into the editor's updates.
func (r *textRun) event(e agent.Event) {
	c := r.c
	switch e.Type {
	case agent.EventMessage:
		r.chunks.write([]byte(e.Text))
	case agent.EventToolCall:
		r.chunks.flush()
		t := *e.Tool
		r.tools[t.ID] = t
		status := acp.ToolCallStatus(t.Status)
		if id, ok := c.approved[t.AgentTrustName()]; ok {
			// The call the editor allowed, in the run that has it trusted.
			delete(c.approved, t.AgentTrustName())
			r.ids[t.ID] = id
			c.a.update(c.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(status)))
			return
		}
		id := c.newID()
		r.ids[t.ID] = id
		c.open = append(c.open, id)
		kind := acp.ToolKind(t.Kind)
		if kind == "" {
			kind = acp.ToolKindOther
		}
		c.a.update(c.sessionID, acp.StartToolCall(id, toolTitle(t), acp.WithStartKind(kind),
			acp.WithStartStatus(status), acp.WithStartRawInput(map[string]any{"tool": t.TrustName()})))
	case agent.EventToolCallUpdate:
		r.chunks.flush()
		id, ok := r.ids[e.Tool.ID]
		if !ok {
			return
		}
		t := r.tools[e.Tool.ID]
		if e.Tool.Denied {
			r.denied = true
		}
		if e.Tool.Status == agent.ToolFailed && !t.Trusted {
			// Refused or stopped for want of approval: asked about once the run has ended.
			c.held[t.AgentTrustName()] = id
			return
		}
		c.end(id, acp.ToolCallStatus(e.Tool.Status))
	}
}

func (c *toolCalls) newID() acp.ToolCallId {
	c.n++
	return acp.ToolCallId("qkit-" + strconv.FormatUint(c.turn, 10) + "-" + strconv.Itoa(c.n))
}

// pendingID is the editor's id of a call the agent needed and was not allowed: the held one, or a
// new call when the agent did not announce it (q's approval error without a banner).
func (c *toolCalls) pendingID(t agent.ToolCall) acp.ToolCallId {
	if id, ok := c.held[t.AgentTrustName()]; ok {
		delete(c.held, t.AgentTrustName())
		return id
	}
	id := c.newID()
	c.open = append(c.open, id)
	kind := acp.ToolKind(t.Kind)
	if kind == "" {
		kind = acp.ToolKindOther
	}
	c.a.update(c.sessionID, acp.StartToolCall(id, toolTitle(t), acp.WithStartKind(kind),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(map[string]any{"tool": t.TrustName()})))
	return id
}

// end reports a call's last status.
func (c *toolCalls) end(id acp.ToolCallId, status acp.ToolCallStatus) {
	c.open = slices.DeleteFunc(c.open, func(x acp.ToolCallId) bool { return x == id })
	c.a.update(c.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(status)))
}

// failHeld reports the held calls nobody asked about as failed.
func (c *toolCalls) failHeld() {
	for _, id := range c.held {
		c.end(id, acp.ToolCallStatusFailed)
	}
	c.held = map[string]acp.ToolCallId{}
}

// finish ends every call still open: completed when the turn ended well, failed otherwise.
func (c *toolCalls) finish(r turnResult) turnResult {
	c.failHeld()
	status := acp.ToolCallStatusCompleted
	if r.stop != acp.StopReasonEndTurn {
		status = acp.ToolCallStatusFailed
	}
	for _, id := range slices.Clone(c.open) {
		c.end(id, status)
	}
	return r
}

// fail reports err as the agent's message and ends the turn with refusal (stream
// errors map to refusal).
func (a *adapter) fail(ctx context.Context, say func(string), err error) turnResult {
	if ctx.Err() != nil {
		return turnResult{stop: acp.StopReasonCancelled}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, a.agentName()) {
		msg = a.agentName() + " failed: " + msg
	}
	say(fmt.Sprintf("\n\n%s\n", msg))
	return turnResult{stop: acp.StopReasonRefusal}
}

func (a *adapter) agentName() string { return filepath.Base(a.opts.Limits.Command) }

// toolTitle is what the editor shows for a call: the tool's name (and its MCP server).
func toolTitle(t agent.ToolCall) string {
	switch {
	case t.Title != "":
		return t.Title
	case t.Name != "":
		return t.Name
	}
	return "a tool the agent did not name"
}

func toolLabel(t agent.ToolCall) string {
	if t.Name == "" {
		return "the tool"
	}
	return t.TrustName()
}

// Permission option ids, one per kind.
const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optRejectOnce  = "reject_once"
)

// askPermission asks the client whether the agent may use the tool of call id (reported pending).
// A cancelled turn (session/cancel) answers cancelled: the SDK withdraws the request with
// $/cancel_request when ctx ends.
func (a *adapter) askPermission(ctx context.Context, sessionID string, id acp.ToolCallId, tool agent.ToolCall) choice {
	title := toolTitle(tool)
	kind := acp.ToolKind(tool.Kind)
	if kind == "" {
		kind = acp.ToolKindOther
	}
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(sessionID),
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind,
			Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: map[string]any{"tool": tool.TrustName()}},
		Options: []acp.PermissionOption{
			{OptionId: optAllowOnce, Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optAllowAlways, Name: "Allow for this session", Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: optRejectOnce, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	switch {
	case ctx.Err() != nil:
		return choiceCancelled
	case err != nil:
		a.opts.Logger.Warn("permission request failed", "session", sessionID, "tool", tool.TrustName(), "err", err)
		return choiceReject
	case resp.Outcome.Cancelled != nil || resp.Outcome.Selected == nil:
		return choiceCancelled
	}
	switch resp.Outcome.Selected.OptionId {
	case optAllowOnce:
		return choiceAllowOnce
	case optAllowAlways:
		return choiceAllowAlways
	}
	return choiceReject
}
