package approval

import (
	"errors"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
)

// unaskedWrite and unaskedCommand are requests as acpclient describes them to Access.
var (
	unaskedWrite = acpclient.Access{SessionID: "s", Method: acp.ClientMethodFsWriteTextFile, Path: "/w/work/out.txt",
		Tool: agent.ToolCall{Kind: "edit", Title: "Write /w/work/out.txt"}}
	unaskedCommand = acpclient.Access{SessionID: "s", Method: acp.ClientMethodTerminalCreate, Command: []string{"sh", "-c", "rm -rf ~"},
		Tool: agent.ToolCall{Kind: "execute", Title: "Run sh -c rm -rf ~"}}
)

func granted(a acpclient.Access, kind string) acpclient.Access {
	a.Granted = &agent.ToolCall{ID: "t1", Kind: kind, Status: "in_progress"}
	return a
}

func TestAccess(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     *Policy
		req   acpclient.Access
		allow bool
		fails string // the run fails (Err) with this message
	}{
		{"a permission granted for the tool call", &Policy{}, granted(unaskedWrite, "edit"), true, ""},
		{"a permission granted for the command's call", &Policy{}, granted(unaskedCommand, "execute"), true, ""},
		{"yolo", &Policy{TrustAll: true}, unaskedCommand, true, ""},
		{"trust write covers a write", &Policy{Trust: []string{"write"}}, unaskedWrite, true, ""},
		{"trust edit covers a write", &Policy{Trust: []string{"read,edit"}}, unaskedWrite, true, ""},
		{"trust shell covers a command", &Policy{Trust: []string{"shell"}}, unaskedCommand, true, ""},
		{"trust a title glob", &Policy{Trust: []string{"Run sh *"}}, unaskedCommand, true, ""},
		{"trust shell does not cover a write", &Policy{Trust: []string{"shell"}, OnPermission: Deny}, unaskedWrite, false, ""},
		{"trust write does not cover a command", &Policy{Trust: []string{"write"}, OnPermission: Deny}, unaskedCommand, false, ""},
		{"deny wins over yolo", &Policy{TrustAll: true, Deny: []string{"write"}}, unaskedWrite, false, ""},
		{"deny wins over a grant", &Policy{Deny: []string{"shell"}}, granted(unaskedCommand, "execute"), false, ""},
		{"deny does not fail the run", &Policy{Deny: []string{"execute"}, OnPermission: Fail}, unaskedCommand, false, ""},
		{"on-permission deny refuses", &Policy{OnPermission: Deny}, unaskedWrite, false, ""},
		{"on-permission ask refuses: nobody asked", &Policy{OnPermission: Ask, Asker: &asker{answers: []string{AllowOnce}}}, unaskedCommand, false, ""},
		{"on-permission fail fails a write", &Policy{OnPermission: Fail}, unaskedWrite, false,
			"refused to write /w/work/out.txt: the agent did not ask permission for it (fs/write_text_file) and nothing allowed it; " +
				"to allow it, run again with --trust-tools write (or --yolo to trust every tool)"},
		{"the zero policy fails a command", &Policy{Trust: []string{"read"}}, unaskedCommand, false,
			`refused to run sh -c "rm -rf ~": the agent did not ask permission for it (terminal/create) and nothing allowed it; ` +
				"to allow it, run again with --trust-tools read,shell (or --yolo to trust every tool)"},
	} {
		err := c.p.Access(t.Context(), c.req)
		var unasked *UnaskedError
		switch {
		case (err == nil) != c.allow:
			t.Errorf("%s: %v, want allowed %v", c.name, err, c.allow)
		case err != nil && !errors.As(err, &unasked):
			t.Errorf("%s: %T %v", c.name, err, err)
		}
		if refused := c.p.Refused(); !c.allow && !slices.Equal(refused, []string{c.req.String()}) || c.allow && len(refused) > 0 {
			t.Errorf("%s: refused %q", c.name, refused)
		}
		switch runErr := c.p.Err(); {
		case c.fails == "" && runErr != nil:
			t.Errorf("%s: the run fails: %v", c.name, runErr)
		case c.fails != "" && (runErr == nil || runErr.Error() != c.fails || runErr != err):
			t.Errorf("%s: the run fails with %v, want %q", c.name, runErr, c.fails)
		}
	}
	denied := &Policy{Deny: []string{"write"}}
	if err := denied.Access(t.Context(), unaskedWrite); err == nil || err.Error() != "refused to write /w/work/out.txt: --deny-tools refuses it" {
		t.Errorf("denied: %v", err)
	}
}

func TestAccessAfterAllowAlways(t *testing.T) {
	// A person's "allow always" for a shell covers the commands the agent then runs unasked
	// (an agent that remembers the answer stops asking), not its writes.
	p := &Policy{OnPermission: Ask, Asker: &asker{answers: []string{AllowAlways}}}
	if _, err := p.Decide(t.Context(), request(shell)); err != nil {
		t.Fatal(err)
	}
	if err := p.Access(t.Context(), unaskedCommand); err != nil {
		t.Errorf("command after allow always: %v", err)
	}
	if err := p.Access(t.Context(), unaskedWrite); err == nil {
		t.Error("a write was allowed by the shell's allow always")
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[*acpclient.Access]string{
		&unaskedWrite:   "write /w/work/out.txt",
		&unaskedCommand: `run sh -c "rm -rf ~"`,
		{Method: acp.ClientMethodFsWriteTextFile, Path: "/w/x\x1b]52;c;eA==\x07.txt"}:         `write "/w/x\x1b]52;c;eA==\a.txt"`,
		{Method: acp.ClientMethodTerminalCreate, Command: []string{"echo", "\u202eevil", ""}}: `run echo "\u202eevil" ""`,
	} {
		if got := a.String(); got != want {
			t.Errorf("%q, want %q", got, want)
		}
		if strings.ContainsAny(a.String(), "\x1b\x07\u202e") {
			t.Errorf("%q holds a control character", a.String())
		}
	}
}

// FuzzAccess: whatever path or command the agent sends and whatever the patterns, a request
// --deny-tools names is never served, one the flags do not cover is served only with a grant, and
// what is listed as refused is safe on a terminal.
func FuzzAccess(f *testing.F) {
	f.Add("/w/x.txt", "sh\x00-c\x00ls", "write", "shell", false, false)
	f.Add("/w/\u202ex", "rm\x00-rf\x00/", "*", "", true, true)
	f.Fuzz(func(t *testing.T, path, command, trust, deny string, yolo, grant bool) {
		for _, req := range []acpclient.Access{
			{Method: acp.ClientMethodFsWriteTextFile, Path: path, Tool: agent.ToolCall{Kind: "edit", Title: "Write " + path}},
			{Method: acp.ClientMethodTerminalCreate, Command: strings.Split(command, "\x00"), Tool: agent.ToolCall{Kind: "execute", Title: "Run " + command}},
		} {
			if grant {
				req = granted(req, acpclient.GrantedKinds(req.Method)[0])
			}
			p := &Policy{TrustAll: yolo, Trust: []string{trust}, Deny: []string{deny}, OnPermission: Deny}
			ok := p.Access(t.Context(), req) == nil
			if p.Err() != nil {
				t.Fatal(p.Err())
			}
			if ok && Matches(p.Deny, req.Tool) {
				t.Fatalf("%+v: a denied request was served", req)
			}
			if ok && !grant && !yolo && !Matches(p.Trust, req.Tool) {
				t.Fatalf("%+v: served without a grant or a flag", req)
			}
			for _, r := range p.Refused() {
				if strings.ContainsFunc(r, func(c rune) bool {
					return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
				}) {
					t.Fatalf("refused %q holds a control character", r)
				}
			}
		}
	})
}

// TestNeedsPermissionMessageSafe: a tool's title comes from the agent; the message naming it (on
// stderr) carries no escape sequence or bidi control.
func TestNeedsPermissionMessageSafe(t *testing.T) {
	_, err := (&Policy{}).Decide(t.Context(), request(agent.ToolCall{ID: "t", Title: "x\x1b]0;pwned\x07\u202eevil", Kind: "other"}))
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07\u202e") || !strings.Contains(err.Error(), "--trust-tools xevil (or") {
		t.Fatalf("%q", err)
	}
}

// The errors' hints are in the front end's words (Policy.Flags); the zero Flags are ask's.
func TestErrorsInTheFrontsWords(t *testing.T) {
	mcp := agent.TrustFlags{ByName: "trust-tools", All: "yolo-mode true"}
	write := acpclient.Access{Method: "fs/write_text_file", Path: "/w/a.txt", Tool: agent.ToolCall{Kind: "edit", Title: "Write /w/a.txt"}}
	cases := []struct {
		err  error
		want string
	}{
		{&UnaskedError{Access: write}, "to allow it, run again with --trust-tools write (or --yolo to trust every tool)"},
		{&UnaskedError{Access: write, Flags: mcp}, "to allow it, run again with trust-tools write (or yolo-mode true to trust every tool)"},
		{&UnaskedError{Access: write, Denied: true}, ": --deny-tools refuses it"},
		{&NeedsPermissionError{Tool: shell}, "; or use --on-permission ask to decide, or deny to refuse it and carry on"},
		{&NeedsPermissionError{Tool: shell, Flags: mcp}, "which needs permission: nothing allowed it; to allow it, run again with trust-tools shell (or yolo-mode true to trust every tool)"},
	}
	for _, c := range cases {
		if got := c.err.Error(); !strings.HasSuffix(got, c.want) {
			t.Errorf("%q\ndoes not end with %q", got, c.want)
		}
	}
}
