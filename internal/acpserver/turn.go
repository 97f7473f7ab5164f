package acpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/agent"
)

// maxApprovals bounds the permission round-trips of one turn (each approval re-runs q).
const maxApprovals = 8

// turnInput is the session state a turn starts from: a copy, so the worker shares nothing.
type turnInput struct {
	turn      uint64 // the turn's id, unique within the connection
	sessionID string
	cwd       string
	model     string
	trusted   []string
}

// runTurn runs one prompt, streams the reply, and stores the turn. It returns how the turn ended
// and the tools the user allowed for the rest of the session.
func (a *adapter) runTurn(ctx context.Context, in turnInput, prompt userPrompt) (turnResult, []string) {
	out := &reply{a: a, sessionID: in.sessionID, rank: in.turn, limit: a.opts.Limits.MaxResponseSize}
	say := out.say
	var always []string
	var res turnResult
	if line, ok := a.slashCommand(prompt.text); ok {
		res = a.runCommand(ctx, in, line, say)
	} else {
		res = a.runAgent(ctx, in, prompt.text, out, &always)
	}
	// The turn is stored even when cancelled: the client has shown what was streamed, and a
	// reload should show the same. WithoutCancel: a cancelled turn must still be written.
	t := Turn{Prompt: prompt.text, Blocks: prompt.blocks, Reply: out.text()}
	if err := a.opts.Store.AppendTurn(context.WithoutCancel(ctx), in.sessionID, t, a.opts.Now()); err != nil {
		a.opts.Logger.Error("cannot store the turn", "session", in.sessionID, "err", err)
	}
	return res, always
}

// sendLines writes notification lines qkit encoded itself (appendChunk). Like the SDK's
// SessionUpdate it sends nothing once the connection has ended: the client may have stopped
// reading.
func (a *adapter) sendLines(rank uint64, b []byte) error {
	if err := a.ctx.Err(); err != nil {
		return err
	}
	return a.pipe.WriteRank(rank, b)
}

// update sends a session/update on the connection's context, not the request's: updates sent
// while a turn winds down after session/cancel must still go out (the SDK refuses to send on a
// cancelled context).
func (a *adapter) update(sessionID string, u acp.SessionUpdate) {
	if err := a.conn.SessionUpdate(a.ctx, acp.SessionNotification{SessionId: acp.SessionId(sessionID), Update: u}); err != nil {
		a.opts.Logger.Debug("session/update not sent", "session", sessionID, "err", err)
	}
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
	prompt, _ := WithHistory(history, userText, budget*4/2)
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

// fail reports err as the agent's message and ends the turn with refusal (seed 001: stream
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

// reply is one turn's answer: what goes to the client as agent_message_chunk, and what the
// transcript keeps. q's stream is sent as it comes, up to the runner's output cap (the same for
// every front end), and is recorded from the runner's result; nothing holds a second copy, so memory
// stays flat whatever q prints.
type reply struct {
	a         *adapter
	sessionID string
	rank      uint64   // the turn's id: older turns' chunks go out first (outLock)
	limit     int64    // Limits.MaxResponseSize; 0: no cap
	sent      int64    // bytes of the current run's stream sent
	parts     []string // the transcript's text, in order: the runs' kept output is not copied
	line      []byte   // the encoding buffer, reused for every chunk
}

// say sends text and records it.
func (r *reply) say(text string) {
	if text == "" {
		return
	}
	r.parts = append(r.parts, text)
	r.send(text)
}

// stream sends a chunk of q's output; past the cap it is dropped, as the runner drops it (the
// runner's notice says so at the end).
func (r *reply) stream(text string) {
	if r.limit > 0 && r.sent >= r.limit {
		return
	}
	r.sent += int64(len(text))
	r.send(text)
}

func (r *reply) send(text string) {
	r.line = appendTextChunk(r.line[:0], r.sessionID, kindAgentChunk, text)
	if err := r.a.sendLines(r.rank, r.line); err != nil {
		r.a.opts.Logger.Debug("session/update not sent", "session", r.sessionID, "err", err)
	}
}

// record adds the kept output of a run to the transcript and starts the count for the next run.
func (r *reply) record(body string) {
	if body != "" {
		r.parts = append(r.parts, body)
	}
	r.sent = 0
}

// text is the whole reply, as the transcript keeps it.
func (r *reply) text() string { return strings.Join(r.parts, "") }

// tail keeps the last tailSize bytes of a stream.
type tail struct{ b []byte }

const tailSize = 8 << 10

func (t *tail) write(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > 2*tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
}

func (t *tail) String() string { return string(t.b) }

// utf8Chunks passes stream chunks on as strings, holding back a multi-byte character split
// across two chunks so no chunk carries half of one.
type utf8Chunks struct {
	pending []byte
	emit    func(string)
}

func (u *utf8Chunks) write(b []byte) {
	u.pending = append(u.pending, b...)
	cut := len(u.pending)
	// Back up over at most 3 bytes of an unfinished sequence at the end.
	for i := 1; i <= 3 && i <= len(u.pending); i++ {
		c := u.pending[len(u.pending)-i]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(u.pending[len(u.pending)-i:]) {
				cut = len(u.pending) - i
			}
			break
		}
	}
	if cut > 0 {
		u.emit(string(u.pending[:cut]))
		u.pending = append(u.pending[:0], u.pending[cut:]...)
	}
}

func (u *utf8Chunks) flush() {
	if len(u.pending) > 0 {
		u.emit(string(u.pending))
		u.pending = nil
	}
}
