package fakeq

// The tool calls of `q acp` (acp.go): permission requests as kiro makes them, and the work done
// in-process (kiro's v2 engine) or through the client's fs/* and terminal/* (V3).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/procgroup"
)

// tool makes one tool call; stop is set when the turn ends there (rejected or cancelled).
func (t *acpTurn) tool(n int, spec string) (reason acp.StopReason, stop bool) {
	name, arg, _ := strings.Cut(spec, ":")
	id := acp.ToolCallId(fmt.Sprintf("tooluse_fakeq%d", n))
	var kind acp.ToolKind
	var title string
	var locs []acp.ToolCallLocation
	var content []acp.ToolCallContent
	gated := true
	path := arg
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(t.s.cwd, path)
	}
	writeText := unescape(os.Getenv("FAKEQ_ACP_WRITE_TEXT"))
	if writeText == "" {
		writeText = "written by fakeq\n"
	}
	switch name {
	case "shell":
		kind, title = acp.ToolKindExecute, "Running: "+arg
	case "read":
		kind, title = acp.ToolKindRead, "Reading "+arg
		locs = []acp.ToolCallLocation{{Path: path}}
		rel, err := filepath.Rel(t.s.cwd, path)
		gated = err != nil || rel == ".." || strings.HasPrefix(rel, "../")
	case "write":
		kind, title = acp.ToolKindEdit, "Writing "+arg
		locs = []acp.ToolCallLocation{{Path: path}}
		if old, err := os.ReadFile(path); err == nil {
			content = []acp.ToolCallContent{acp.ToolDiffContent(path, writeText, string(old))}
		} else {
			content = []acp.ToolCallContent{acp.ToolDiffContent(path, writeText)}
		}
	case "mcp":
		kind, title = acp.ToolKindOther, "Running: @"+arg // kiro's title for an MCP tool call
	default:
		kind, title = acp.ToolKindOther, spec
	}
	t.send(acp.StartToolCall(id, title, acp.WithStartKind(kind), acp.WithStartStatus(acp.ToolCallStatusPending),
		acp.WithStartLocations(locs), acp.WithStartContent(content), acp.WithStartRawInput(map[string]any{"tool": name, "arg": arg})))

	trustName := name
	if name == "mcp" {
		trustName = "@" + arg
	}
	if gated && !t.trusted(trustName, arg) {
		resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
			SessionId: acp.SessionId(t.s.id),
			ToolCall:  acp.ToolCallUpdate{ToolCallId: id, Title: &title},
			Options: []acp.PermissionOption{
				{OptionId: "allow_once", Name: "Yes", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "allow_always", Name: "Always", Kind: acp.PermissionOptionKindAllowAlways},
				{OptionId: "reject_once", Name: "No", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		switch {
		case err != nil || resp.Outcome.Cancelled != nil || t.ctx.Err() != nil:
			t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			return acp.StopReasonCancelled, true
		case resp.Outcome.Selected.OptionId == "reject_once" || resp.Outcome.Selected.OptionId == "reject_always":
			t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
				acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("User denied tool execution"))})))
			return acp.StopReasonRefusal, true
		case resp.Outcome.Selected.OptionId == "allow_always":
			t.s.trusted[trustName] = true
		}
	}
	t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
	t.unaskedDuring(n)
	out, err := t.exec(name, arg, path, writeText)
	if t.ctx.Err() != nil {
		// session/cancel mid-tool: kiro stops the tool (its process is killed) and ends the turn.
		t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		return acp.StopReasonCancelled, true
	}
	status := acp.ToolCallStatusCompleted
	if err != nil {
		status, out = acp.ToolCallStatusFailed, err.Error()
	}
	if f := os.Getenv("FAKEQ_ACP_RAN"); f != "" {
		appendLine(f, spec)
	}
	t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(status),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(out))})))
	return "", false
}

func (t *acpTurn) trusted(name, arg string) bool {
	if t.a.flags.trustAll || t.s.trusted[name] {
		return true
	}
	for _, tr := range t.a.flags.trust {
		if tr == name || (strings.HasPrefix(name, "@") && tr == "@"+strings.Split(arg, "/")[0]) {
			return true
		}
	}
	return false
}

// exec runs the tool: in-process as kiro's v2 engine does, or through the client (fs/*,
// terminal/*) as V3 does when the client offers it.
func (t *acpTurn) exec(name, arg, path, writeText string) (string, error) {
	v3 := os.Getenv("FAKEQ_ACP_V3") != ""
	sid := acp.SessionId(t.s.id)
	switch name {
	case "shell":
		if v3 && t.a.client.Terminal {
			return t.terminal(arg)
		}
		return t.shell(arg)
	case "read":
		if v3 && t.a.client.Fs.ReadTextFile {
			r, err := t.a.conn.ReadTextFile(t.ctx, acp.ReadTextFileRequest{SessionId: sid, Path: path})
			return r.Content, err
		}
		b, err := os.ReadFile(path)
		return string(b), err
	case "write":
		if v3 && t.a.client.Fs.WriteTextFile {
			_, err := t.a.conn.WriteTextFile(t.ctx, acp.WriteTextFileRequest{SessionId: sid, Path: path, Content: writeText})
			return "wrote " + path, err
		}
		return "wrote " + path, os.WriteFile(path, []byte(writeText), 0o644)
	case "mcp":
		return t.callMCP(arg)
	}
	return "done", nil
}

// shell runs command with sh in a process group of its own: a cancel stops the whole group, the
// commands the shell started included, as kiro stops a tool it runs in-process (a kill of the
// shell alone would leave its children running on after the turn).
func (t *acpTurn) shell(command string) (string, error) {
	var out bytes.Buffer
	p, err := procgroup.Start("sh", []string{"-c", command}, procgroup.Options{
		Dir: t.s.cwd, MergeStderr: true, Stdout: procgroup.Copy(&out), Grace: time.Second,
	})
	if err != nil {
		return "", err
	}
	if ex := p.Wait(t.ctx); ex.Code != 0 || ex.Signal != "" {
		return out.String(), errors.New(ex.String())
	}
	return out.String(), nil
}

func (t *acpTurn) terminal(command string) (string, error) { return t.terminalMeta(command, nil) }

// terminalMeta runs command through the client's terminal, the create request carrying meta.
func (t *acpTurn) terminalMeta(command string, meta map[string]any) (string, error) {
	sid := acp.SessionId(t.s.id)
	c, err := t.a.conn.CreateTerminal(t.ctx, acp.CreateTerminalRequest{Meta: meta, SessionId: sid, Command: "sh", Args: []string{"-c", command}, Cwd: &t.s.cwd})
	if err != nil {
		return "", err
	}
	defer func() {
		_, _ = t.a.conn.ReleaseTerminal(context.Background(), acp.ReleaseTerminalRequest{SessionId: sid, TerminalId: c.TerminalId})
	}()
	w, err := t.a.conn.WaitForTerminalExit(t.ctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: c.TerminalId})
	if err != nil {
		return "", err
	}
	o, err := t.a.conn.TerminalOutput(t.ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: c.TerminalId})
	if err != nil {
		return "", err
	}
	if w.ExitCode != nil && *w.ExitCode != 0 {
		return o.Output, fmt.Errorf("exit status %d: %s", *w.ExitCode, o.Output)
	}
	return o.Output, nil
}

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}

// unaskedSpecs are FAKEQ_ACP_UNASKED's entries for tool call n of FAKEQ_ACP_TOOLS (those ending
// in @n), or, for n 0, those that belong to no tool call.
func unaskedSpecs(n int) []string {
	var out []string
	for _, spec := range strings.Split(os.Getenv("FAKEQ_ACP_UNASKED"), ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		at := 0
		if i := strings.LastIndex(spec, "@"); i > 0 {
			if k, err := strconv.Atoi(spec[i+1:]); err == nil {
				spec, at = spec[:i], k
			}
		}
		if at == n {
			out = append(out, spec)
		}
	}
	return out
}

// unaskedDuring sends, while tool call n runs, the requests FAKEQ_ACP_UNASKED gives it: as a
// V3 engine would, but whatever permission the call had (or had not).
func (t *acpTurn) unaskedDuring(n int) {
	for _, spec := range unaskedSpecs(n) {
		_, _ = t.unaskedRequest(spec)
	}
}

// unasked makes each FAKEQ_ACP_UNASKED request that belongs to no tool call: a tool call of its
// own (kind edit or execute, in progress at once) that never asks permission, the request, and
// the call completed, or failed with the client's error.
func (t *acpTurn) unasked() {
	for i, spec := range unaskedSpecs(0) {
		id := acp.ToolCallId(fmt.Sprintf("tooluse_unasked%d", i+1))
		name, arg, _ := strings.Cut(spec, ":")
		kind, title := acp.ToolKindEdit, "Writing "+arg
		if name == "shell" {
			kind, title = acp.ToolKindExecute, "Running: "+arg
		}
		t.send(acp.StartToolCall(id, title, acp.WithStartKind(kind), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		out, err := t.unaskedRequest(spec)
		status := acp.ToolCallStatusCompleted
		if err != nil {
			status, out = acp.ToolCallStatusFailed, err.Error()
		}
		t.send(acp.UpdateToolCall(id, acp.WithUpdateStatus(status),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(out))})))
	}
}

// unaskedRequest sends one request without asking permission (write:PATH as fs/write_text_file,
// shell:CMD as terminal/create and the rest of a terminal's life), with _meta.toolCallId from
// FAKEQ_ACP_UNASKED_META when set, and appends how the client answered to FAKEQ_ACP_RAN.
func (t *acpTurn) unaskedRequest(spec string) (string, error) {
	name, arg, _ := strings.Cut(spec, ":")
	var meta map[string]any
	if id := os.Getenv("FAKEQ_ACP_UNASKED_META"); id != "" {
		meta = map[string]any{"toolCallId": id}
	}
	var out string
	var err error
	switch name {
	case "write":
		path := arg
		if !filepath.IsAbs(path) {
			path = filepath.Join(t.s.cwd, path)
		}
		_, err = t.a.conn.WriteTextFile(t.ctx, acp.WriteTextFileRequest{Meta: meta, SessionId: acp.SessionId(t.s.id), Path: path, Content: "written unasked\n"})
		out = "wrote " + path
	case "shell":
		out, err = t.terminalMeta(arg, meta)
	default:
		err = fmt.Errorf("FAKEQ_ACP_UNASKED: %q is not write:PATH or shell:CMD", spec)
	}
	if f := os.Getenv("FAKEQ_ACP_RAN"); f != "" {
		if err != nil {
			appendLine(f, "unasked "+spec+": refused: "+err.Error())
		} else {
			appendLine(f, "unasked "+spec+": served")
		}
	}
	return out, err
}
