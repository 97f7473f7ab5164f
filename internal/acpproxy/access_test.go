package acpproxy

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
)

// answeringEditor answers every permission request with the option id answer; the editor's other
// requests are not used here.
type answeringEditor struct {
	EditorConn
	answer string
}

func (e answeringEditor) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(e.answer))}, nil
}

// alwaysAsker is a person who allows everything always, for approval.Policy.
type alwaysAsker struct{}

func (alwaysAsker) AskPermission(context.Context, acpclient.PermissionRequest) (string, error) {
	return approval.AllowAlways, nil
}

// TestProxyAllowAlwaysCoversWhatPolicyCovers: after the editor allows a tool always, a write the
// agent then sends without asking (to an editor without fs, so qkit would serve it) is served
// exactly when approval.Policy, after a person's "allow always" for the same tool, serves it: an
// edit with no name of its own (as ACP reports every edit) covers it, as before; a tool with a
// name of its own (fs_write), a read or an MCP tool does not. The proxy used to remember the
// kind, so a named edit let every later write through (and a tool of kind other titled "write"
// none). An "allow once" covers nothing later.
func TestProxyAllowAlwaysCoversWhatPolicyCovers(t *testing.T) {
	options := []agent.PermissionOption{
		{ID: "allow_once", Kind: approval.AllowOnce},
		{ID: "allow_always", Kind: approval.AllowAlways},
		{ID: "reject_once", Kind: "reject_once"},
	}
	write := acpclient.Access{SessionID: "agent-1", Method: acp.ClientMethodFsWriteTextFile, Path: "/w/later.txt",
		Tool: agent.ToolCall{Kind: "edit", Title: "Write /w/later.txt"}}
	for _, c := range []struct {
		name   string
		tool   agent.ToolCall
		answer string
		served bool
	}{
		{"a nameless edit", agent.ToolCall{ID: "t1", Title: "Writing first.txt", Kind: "edit"}, "allow_always", true},
		{"a nameless delete", agent.ToolCall{ID: "t1", Title: "Deleting first.txt", Kind: "delete"}, "allow_always", true},
		{"a named edit", agent.ToolCall{ID: "t1", Name: "fs_write", Title: "Writing first.txt", Kind: "edit"}, "allow_always", false},
		{"a named move", agent.ToolCall{ID: "t1", Name: "mv_tool", Title: "Moving first.txt", Kind: "move"}, "allow_always", false},
		{"a read", agent.ToolCall{ID: "t1", Title: "Reading first.txt", Kind: "read"}, "allow_always", false},
		{"an MCP tool", agent.ToolCall{ID: "t1", Title: "Running: @fs/write_file", Kind: "other"}, "allow_always", false},
		// Trusted under its title, which is the name a write goes by: the proxy ignored kindless tools.
		{"a kindless tool titled write", agent.ToolCall{ID: "t1", Title: "write", Kind: "other"}, "allow_always", true},
		{"a nameless edit, once", agent.ToolCall{ID: "t1", Title: "Writing first.txt", Kind: "edit"}, "allow_once", false},
	} {
		p := New(context.Background(), Options{
			Editor: &testEditor{out: &lockedBuf{}, conn: answeringEditor{answer: c.answer}},
			Logger: slog.New(slog.DiscardHandler),
		})
		p.register(&Session{id: "qkit-1", agentID: "agent-1"})
		req := acpclient.PermissionRequest{SessionID: "agent-1", Tool: c.tool, Options: options}
		if d, err := p.permission(t.Context(), req); err != nil || d.OptionID != c.answer {
			t.Fatalf("%s: the editor's answer came back as %+v, %v", c.name, d, err)
		}
		err := p.access(t.Context(), write)
		var unasked *UnaskedError
		switch {
		case c.served && err != nil:
			t.Errorf("%s allowed (%s) by the editor: the later unasked write was refused: %v", c.name, c.answer, err)
		case !c.served && !errors.As(err, &unasked):
			t.Errorf("%s allowed (%s) by the editor: the later unasked write got %v, want the proxy's refusal", c.name, c.answer, err)
		}
		if c.answer != "allow_always" {
			continue
		}
		// The other doors: a person allows the same tool always through approval.Policy.
		policy := &approval.Policy{OnPermission: approval.Ask, Asker: alwaysAsker{}}
		if _, err := policy.Decide(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if served := policy.Access(t.Context(), write) == nil; served != c.served {
			t.Errorf("%s: approval.Policy serves the unasked write: %v, the proxy: %v", c.name, served, c.served)
		}
	}
}

// TestProxyAccessGrantedCall: a write or a command that belongs to a tool call the editor allowed
// in this turn (req.Granted) is served with no grant remembered, also for a session the proxy does
// not know; without one it is refused whoever would serve it: an editor that serves files and
// terminals itself gets it under the same rule (it used to get every write and every command).
func TestProxyAccessGrantedCall(t *testing.T) {
	write := acpclient.Access{SessionID: "unknown", Method: acp.ClientMethodFsWriteTextFile, Path: "/w/x",
		Tool: agent.ToolCall{Kind: "edit", Title: "Write /w/x"}}
	run := acpclient.Access{SessionID: "unknown", Method: acp.ClientMethodTerminalCreate, Command: []string{"sh", "-c", "true"},
		Tool: agent.ToolCall{Kind: "execute", Title: "Run sh -c true"}}
	for _, caps := range []acp.ClientCapabilities{{}, {Fs: acp.FileSystemCapabilities{WriteTextFile: true}, Terminal: true}} {
		p := New(context.Background(), Options{Editor: &testEditor{out: &lockedBuf{}, caps: caps}, Logger: slog.New(slog.DiscardHandler)})
		for _, req := range []acpclient.Access{write, run} {
			var unasked *UnaskedError
			if err := p.access(t.Context(), req); !errors.As(err, &unasked) {
				t.Fatalf("editor %+v: an unasked %s got %v, want the proxy's refusal", caps, req, err)
			}
			req.Granted = &agent.ToolCall{ID: "t1", Kind: req.Tool.Kind, Status: "in_progress"}
			if err := p.access(t.Context(), req); err != nil {
				t.Fatalf("editor %+v: a granted call's %s: %v", caps, req, err)
			}
		}
	}
}

// terminalEditor records the terminals it is asked to create.
type terminalEditor struct {
	EditorConn
	created []acp.CreateTerminalRequest
}

func (e *terminalEditor) CreateTerminal(_ context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	e.created = append(e.created, r)
	return acp.CreateTerminalResponse{TerminalId: "term-1"}, nil
}

// TestProxyTerminalCwdHeldToFolder: a terminal the editor runs starts inside the session's folder,
// whatever permission covered the command: a cwd outside it, or a link inside it that leads out,
// is refused before the editor sees it; one inside is forwarded absolute, and none becomes the
// folder itself. The proxy used to forward the agent's cwd unchecked.
func TestProxyTerminalCwdHeldToFolder(t *testing.T) {
	cwd, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "out")); err != nil {
		t.Fatal(err)
	}
	ed := &terminalEditor{}
	p := New(context.Background(), Options{Editor: &testEditor{out: &lockedBuf{}, caps: acp.ClientCapabilities{Terminal: true}, conn: ed},
		Logger: slog.New(slog.DiscardHandler)})
	p.register(&Session{id: "qkit-1", agentID: "agent-1", cwd: cwd})
	create := func(dir *string) error {
		_, err := proxyTerminals{p}.CreateTerminal(t.Context(), acp.CreateTerminalRequest{SessionId: "agent-1", Command: "true", Cwd: dir})
		return err
	}
	for _, dir := range []string{outside, filepath.Join(cwd, "out"), filepath.Join(cwd, ".."), "../x"} {
		if err := create(&dir); err == nil || !strings.Contains(err.Error(), "outside the working directory") {
			t.Errorf("cwd %s: %v, want the refusal", dir, err)
		}
	}
	if len(ed.created) != 0 {
		t.Fatalf("the editor was asked for %+v", ed.created)
	}
	sub := "sub"
	if err := create(&sub); err != nil {
		t.Fatal(err)
	}
	if err := create(nil); err != nil {
		t.Fatal(err)
	}
	if len(ed.created) != 2 || *ed.created[0].Cwd != filepath.Join(cwd, "sub") || *ed.created[1].Cwd != cwd || ed.created[0].SessionId != "qkit-1" {
		t.Fatalf("the editor was asked for %+v", ed.created)
	}
}
