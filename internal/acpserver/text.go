package acpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// maxApprovals bounds the permission round-trips of one turn (each approval re-runs q).
const maxApprovals = 8

// textTurns is the text path: each prompt runs `<agent> chat --no-interactive` through the agent
// runner, with the session's earlier turns and the context files in front of it.
type textTurns struct{ a *adapter }

func (t textTurns) prompt(ctx context.Context, in turnInput, p userPrompt, out *reply) (turnResult, []string) {
	var always []string
	res := t.a.runAgent(ctx, in, p.text, out, &always)
	return res, always
}

// permission outcomes.
type choice int

const (
	choiceReject choice = iota
	choiceAllowOnce
	choiceAllowAlways
	choiceCancelled
)

func (a *adapter) runAgent(ctx context.Context, in turnInput, userText string, out *reply, always *[]string) turnResult {
	say := out.say
	history, err := a.opts.Store.Messages(ctx, in.sessionID)
	if err != nil {
		return a.fail(ctx, say, err)
	}
	budget := max(a.opts.MaxTokens, 1)
	prompt, _ := sessions.WithHistory(history, userText, budget*4/2)
	if a.opts.Context != nil {
		withFiles, warnings, err := a.opts.Context(in.cwd, max(budget-len(prompt)/4, 1), prompt)
		for _, w := range warnings {
			a.opts.Logger.Warn(w, "session", in.sessionID)
		}
		if err != nil {
			return a.fail(ctx, say, fmt.Errorf("context files: %w", err))
		}
		prompt = withFiles
	}
	trusted, trustAll := in.trusted, false
	var approved []acp.ToolCallId
	finish := func(r turnResult) turnResult {
		status := acp.ToolCallStatusCompleted
		if r.stop != acp.StopReasonEndTurn {
			status = acp.ToolCallStatusFailed
		}
		for _, id := range approved {
			a.update(in.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(status)))
		}
		return r
	}
	for attempt := 0; ; attempt++ {
		var streamed tail // where q names the tool it needs approved: the end of its output
		chunks := utf8Chunks{emit: func(s string) { streamed.write(s); out.stream(s) }}
		res, err := agent.Run(ctx, a.opts.Limits, agent.Request{
			Prompt: prompt, Agent: a.opts.Agent, Model: in.model,
			TrustAll: trustAll, TrustTools: trusted, Dir: in.cwd,
		}, chunks.write)
		chunks.flush()
		out.record(res.Body()) // the transcript keeps what the runner kept, not a second copy
		if ctx.Err() != nil {
			return finish(turnResult{stop: acp.StopReasonCancelled})
		}
		say(res.Notice) // what the runner appends after the stream: truncation and timeout notices
		if res.TimedOut {
			return finish(turnResult{stop: acp.StopReasonEndTurn})
		}
		if err == nil && res.ExitCode == 0 {
			return finish(turnResult{stop: acp.StopReasonEndTurn})
		}
		failure := res.Stderr
		if err != nil {
			failure = err.Error() + "\n" + res.Stderr
		}
		if !agent.ApprovalRequired(failure) {
			return finish(a.fail(ctx, say, agentError(err, res)))
		}
		if attempt >= maxApprovals {
			say(fmt.Sprintf("\n\nStopped: %d tools in a row needed approval.\n", maxApprovals))
			return finish(turnResult{stop: acp.StopReasonRefusal})
		}
		tool := toolName(streamed.String() + "\n" + res.Stderr)
		id, c := a.askPermission(ctx, in.sessionID, tool)
		switch c {
		case choiceCancelled:
			a.update(in.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			return finish(turnResult{stop: acp.StopReasonCancelled})
		case choiceReject:
			a.update(in.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			say(fmt.Sprintf("\n\nPermission to use %s was refused, so the turn ended without it.\n", toolLabel(tool)))
			return finish(turnResult{stop: acp.StopReasonEndTurn})
		}
		a.update(in.sessionID, acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
		approved = append(approved, id)
		switch {
		case tool == "":
			// q did not say which tool: the user allowed "the tool", so this one run trusts all.
			trustAll = true
		case !slices.Contains(trusted, tool):
			trusted = append(slices.Clone(trusted), tool)
		}
		if c == choiceAllowAlways && tool != "" {
			*always = append(*always, tool)
		}
	}
}

// fail reports err as the agent's message and ends the turn with refusal (stream
// errors map to refusal).
func (a *adapter) fail(ctx context.Context, say func(string), err error) turnResult {
	if ctx.Err() != nil {
		return turnResult{stop: acp.StopReasonCancelled}
	}
	say(fmt.Sprintf("\n\n%s failed: %v\n", a.agentName(), err))
	return turnResult{stop: acp.StopReasonRefusal}
}

func agentError(err error, res agent.Result) error {
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(res.Stderr); s != "" {
		return fmt.Errorf("exit status %d: %s", res.ExitCode, s)
	}
	return fmt.Errorf("exit status %d", res.ExitCode)
}

func (a *adapter) agentName() string { return filepath.Base(a.opts.Limits.Command) }

// usingTool matches the line q prints before it runs a tool: "Using tool: fs_write".
var usingTool = regexp.MustCompile(`Using tool:\s*([A-Za-z0-9_@./:-]+)`)

// toolName is the last tool q announced in out, or "" when it named none.
func toolName(out string) string {
	m := usingTool.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

func toolLabel(tool string) string {
	if tool == "" {
		return "the tool"
	}
	return tool
}

func toolKind(tool string) acp.ToolKind {
	switch {
	case strings.Contains(tool, "read"):
		return acp.ToolKindRead
	case strings.Contains(tool, "write"):
		return acp.ToolKindEdit
	case strings.Contains(tool, "bash"), strings.Contains(tool, "shell"), strings.Contains(tool, "exec"):
		return acp.ToolKindExecute
	case strings.Contains(tool, "search"), strings.Contains(tool, "grep"), strings.Contains(tool, "glob"):
		return acp.ToolKindSearch
	}
	return acp.ToolKindOther
}

// Permission option ids, one per kind.
const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optRejectOnce  = "reject_once"
)

// askPermission reports the tool as a pending tool call and asks the client whether q may use it.
// A cancelled turn (session/cancel) answers cancelled: the SDK withdraws the request with
// $/cancel_request when ctx ends.
func (a *adapter) askPermission(ctx context.Context, sessionID, tool string) (acp.ToolCallId, choice) {
	id := acp.ToolCallId("qkit-tool-" + uuid.NewString())
	title := fmt.Sprintf("%s wants to use %s", a.agentName(), toolLabel(tool))
	kind := toolKind(tool)
	a.update(sessionID, acp.StartToolCall(id, title, acp.WithStartKind(kind),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(map[string]any{"tool": tool})))
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(sessionID),
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind,
			Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: map[string]any{"tool": tool}},
		Options: []acp.PermissionOption{
			{OptionId: optAllowOnce, Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optAllowAlways, Name: "Allow for this session", Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: optRejectOnce, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	switch {
	case ctx.Err() != nil:
		return id, choiceCancelled
	case err != nil:
		a.opts.Logger.Warn("permission request failed", "session", sessionID, "tool", tool, "err", err)
		return id, choiceReject
	case resp.Outcome.Cancelled != nil || resp.Outcome.Selected == nil:
		return id, choiceCancelled
	}
	switch resp.Outcome.Selected.OptionId {
	case optAllowOnce:
		return id, choiceAllowOnce
	case optAllowAlways:
		return id, choiceAllowAlways
	}
	return id, choiceReject
}
