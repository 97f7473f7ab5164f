package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
)

var kiroOptions = []agent.PermissionOption{
	{ID: "allow_once", Name: "Yes", Kind: "allow_once"},
	{ID: "allow_always", Name: "Always", Kind: "allow_always"},
	{ID: "reject_once", Name: "No", Kind: "reject_once"},
}

func request(tool agent.ToolCall) acpclient.PermissionRequest {
	return acpclient.PermissionRequest{SessionID: "s", Tool: tool, Options: kiroOptions}
}

var shell = agent.ToolCall{ID: "t1", Title: "Running: ls", Kind: "execute"}

// kiroMCP is an MCP tool call as kiro-cli's ACP agent reports it: a title and kind other.
var kiroMCP = agent.ToolCall{ID: "t2", Title: "Running: @github/create_issue", Kind: "other"}

// asker answers from a script and counts the questions.
type asker struct {
	answers []string
	asked   int
}

func (a *asker) AskPermission(context.Context, acpclient.PermissionRequest) (string, error) {
	a.asked++
	if len(a.answers) == 0 {
		return "", errors.New("nobody home")
	}
	ans := a.answers[0]
	a.answers = a.answers[1:]
	return ans, nil
}

func TestDecide(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		p      *Policy
		tool   agent.ToolCall
		option string
		by     string
		err    string
	}{
		{"yolo", &Policy{TrustAll: true}, shell, "allow_always", "policy", ""},
		{"trust by kind name", &Policy{Trust: []string{"shell"}}, shell, "allow_always", "policy", ""},
		{"trust by kind", &Policy{Trust: []string{"EXECUTE"}}, shell, "allow_always", "policy", ""},
		{"trust by glob of the title", &Policy{Trust: []string{"running: *"}}, shell, "allow_always", "policy", ""},
		{"deny wins over yolo", &Policy{TrustAll: true, Deny: []string{"shell"}}, shell, "reject_once", "policy", ""},
		{"deny wins over trust", &Policy{Trust: []string{"shell"}, Deny: []string{"execute_bash"}}, shell, "reject_once", "policy", ""},
		{"mcp by server", &Policy{Trust: []string{"@github"}}, agent.ToolCall{ID: "t", Name: "create_issue", Server: "github"}, "allow_always", "policy", ""},
		{"mcp bare name is not @server/name", &Policy{Trust: []string{"@github/other"}, OnPermission: Deny}, agent.ToolCall{ID: "t", Name: "create_issue", Server: "github"}, "reject_once", "policy", ""},
		{"on-permission deny", &Policy{OnPermission: Deny}, shell, "reject_once", "policy", ""},
		{"on-permission fail", &Policy{OnPermission: Fail}, shell, "", "", "to allow it, run again with --trust-tools shell (or --yolo to trust every tool); or use --on-permission ask"},
		{"the hint keeps what was trusted", &Policy{Trust: []string{"read,write", "Write"}}, shell, "", "", "to allow it, run again with --trust-tools read,write,shell (or"},
		{"zero policy fails", &Policy{}, agent.ToolCall{ID: "t", Title: "Running: ls", Kind: "other"}, "", "", "--trust-tools Running: ls"},
		{"kiro's mcp title fails with @server/tool", &Policy{}, kiroMCP, "", "", "--trust-tools @github/create_issue (or"},
		{"kiro's mcp title by @server/tool", &Policy{Trust: []string{"@github/create_issue"}}, kiroMCP, "allow_always", "policy", ""},
		{"kiro's mcp title by server/tool", &Policy{Trust: []string{"github/create_issue"}}, kiroMCP, "allow_always", "policy", ""},
		{"kiro's mcp title by @server", &Policy{Trust: []string{"@github"}}, kiroMCP, "allow_always", "policy", ""},
		{"kiro's mcp title denied by glob", &Policy{TrustAll: true, Deny: []string{"github/*"}}, kiroMCP, "reject_once", "policy", ""},
		{"a shell command is no mcp tool", &Policy{}, agent.ToolCall{ID: "t", Title: "Running: @github/create_issue", Kind: "execute"}, "", "", "--trust-tools shell (or"},
		{"ask once", &Policy{OnPermission: Ask, Asker: &asker{answers: []string{AllowOnce}}}, shell, "allow_once", "person", ""},
		{"ask reject", &Policy{OnPermission: Ask, Asker: &asker{answers: []string{Reject}}}, shell, "reject_once", "person", ""},
		{"ask error", &Policy{OnPermission: Ask, Asker: &asker{}}, shell, "", "", "nobody home"},
		{"ask without an asker", &Policy{OnPermission: Ask}, shell, "", "", "nobody to ask"},
	} {
		d, err := c.p.Decide(ctx, request(c.tool))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || d.OptionID != c.option || d.By != c.by {
			t.Errorf("%s: %+v %v, want %s by %s", c.name, d, err, c.option, c.by)
		}
	}
}

func TestAllowAlwaysForTheRun(t *testing.T) {
	a := &asker{answers: []string{AllowAlways}}
	p := &Policy{OnPermission: Ask, Asker: a}
	for range 3 {
		d, err := p.Decide(t.Context(), request(shell))
		if err != nil || d.OptionID != "allow_always" {
			t.Fatalf("%+v %v", d, err)
		}
	}
	if a.asked != 1 {
		t.Errorf("asked %d times", a.asked)
	}
	// Another tool is asked about.
	if _, err := p.Decide(t.Context(), request(agent.ToolCall{ID: "w", Title: "Writing x", Kind: "edit"})); err == nil {
		t.Error("an edit was allowed by the shell's allow-always")
	}
}

func TestOptionsTheAgentOffers(t *testing.T) {
	// Only allow_once offered: trust uses it. No reject option: a denial cancels.
	req := acpclient.PermissionRequest{Tool: shell, Options: []agent.PermissionOption{{ID: "ok", Kind: "allow_once"}}}
	if d, err := (&Policy{TrustAll: true}).Decide(t.Context(), req); err != nil || d.OptionID != "ok" {
		t.Errorf("%+v %v", d, err)
	}
	p := &Policy{OnPermission: Deny}
	if d, err := p.Decide(t.Context(), req); err != nil || !d.Cancelled {
		t.Errorf("%+v %v", d, err)
	}
	if got := p.Denied(); len(got) != 1 || got[0] != `"Running: ls" (execute)` {
		t.Errorf("denied %q", got)
	}
	req.Options = []agent.PermissionOption{{ID: "no", Kind: "reject_once"}}
	if _, err := (&Policy{TrustAll: true}).Decide(t.Context(), req); err == nil || !strings.Contains(err.Error(), "offered no way to allow") {
		t.Errorf("%v", err)
	}
}

func TestQuestion(t *testing.T) {
	old := "a"
	tool := agent.ToolCall{ID: "t", Title: "Writing x.go", Kind: "edit", Locations: []agent.Location{{Path: "/w/x.go"}},
		Diffs: []agent.Diff{{Path: "/w/x.go", OldText: &old, NewText: "package x\n"}}, Input: []byte(`{"path":"x.go"}`)}
	q := Question(request(tool)).Questions[0]
	for _, want := range []string{`The agent asks to run "Writing x.go" (edit).`, "File: /w/x.go", "Changes /w/x.go (10 bytes of new text)", `Input: {"path":"x.go"}`} {
		if !strings.Contains(q.Question, want) {
			t.Errorf("question %q lacks %q", q.Question, want)
		}
	}
	if q.Header != "Permission" || len(q.Options) != 3 {
		t.Errorf("%+v", q)
	}
	for _, c := range []struct {
		sel   []string
		other string
		want  string
	}{
		{[]string{LabelAllowOnce}, "", AllowOnce},
		{[]string{LabelAllowAlways}, "", AllowAlways},
		{[]string{LabelReject}, "", Reject},
		{nil, "yes please", AllowOnce},
		{nil, "no way", Reject},
	} {
		if got := answerOf(c.sel, c.other); got != c.want {
			t.Errorf("%v %q: %s", c.sel, c.other, got)
		}
	}
}

// FuzzDecide feeds Decide what an agent may send (any title, kind and options) against any
// patterns: it never panics, picks only one of the agent's options, never allows a denied tool,
// and reads a person's free-text answer without panicking.
func FuzzDecide(f *testing.F) {
	f.Add("Running: ls", "execute", "", "allow_once,allow_always,reject_once", "shell", "", "ask", "yes")
	f.Add("Running: @github/create_issue", "other", "@github/*", "yes:allow_once,no:reject_once", "", "github/*", "deny", "")
	f.Add("", "", "[", "", "*", "", "fail", "allow")
	f.Fuzz(func(t *testing.T, title, kind, trust, opts, deny, also, mode, other string) {
		var options []agent.PermissionOption
		for i, o := range strings.Split(opts, ",") {
			id, k, found := strings.Cut(o, ":")
			if !found {
				k = id
			}
			options = append(options, agent.PermissionOption{ID: id + strings.Repeat("'", i), Kind: k})
		}
		tool := agent.ToolCall{ID: "t", Title: title, Kind: kind}
		p := &Policy{Trust: []string{trust, also}, Deny: []string{deny}, OnPermission: mode,
			Asker: &asker{answers: []string{answerOf(nil, other)}}}
		d, err := p.Decide(context.Background(), acpclient.PermissionRequest{SessionID: "s", Tool: tool, Options: options})
		if err != nil || d.Cancelled {
			return
		}
		i := slices.IndexFunc(options, func(o agent.PermissionOption) bool { return o.ID == d.OptionID })
		if i < 0 {
			t.Fatalf("picked %q, not one of %+v", d.OptionID, options)
		}
		if Matches(p.Deny, tool) && strings.HasPrefix(options[i].Kind, "allow") {
			t.Fatalf("allowed a denied tool: %+v with %q", tool, deny)
		}
	})
}

func TestChatTrust(t *testing.T) {
	cases := []struct {
		trust, deny, want []string
	}{
		{[]string{"shell,read"}, nil, []string{"shell,read"}},             // no deny: as given
		{[]string{"shell,read"}, []string{" , "}, []string{"shell,read"}}, // an empty deny list
		{[]string{"shell, read", "write"}, []string{"shell"}, []string{"read", "write"}},
		{[]string{"execute_bash,fs_read"}, []string{"execute"}, []string{"fs_read"}}, // a kind covers its names
		{[]string{"@git/status,@git/log,@gh/pr"}, []string{"@git/s*"}, []string{"@git/log", "@gh/pr"}},
		{[]string{"@git/status,@gh/pr"}, []string{"@git"}, []string{"@gh/pr"}},
		{[]string{"git/status,gh/pr"}, []string{"@git"}, []string{"@gh/pr"}}, // server/tool is @server/tool
		{[]string{"shell"}, []string{"SHELL"}, nil},
	}
	for _, c := range cases {
		got, err := ChatTrust(false, c.trust, c.deny)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("trust %q deny %q: %q %v, want %q", c.trust, c.deny, got, err, c.want)
		}
	}
	if _, err := ChatTrust(true, nil, []string{"shell"}); !errors.Is(err, ErrDenyWithTrustAll) {
		t.Errorf("--yolo with --deny-tools: %v", err)
	}
	if got, err := ChatTrust(true, nil, nil); err != nil || got != nil {
		t.Errorf("--yolo alone: %q %v", got, err)
	}
}

func TestChatRefusals(t *testing.T) {
	shellT := agent.ToolCall{ID: "1", Name: "shell", Title: "shell", Kind: "execute"}
	gh := agent.ToolCall{ID: "2", Name: "create_issue", Server: "github", Title: "create_issue (github)", Kind: "other"}
	kiro := &agent.UntrustedToolError{Command: "kiro-cli", Tools: []agent.ToolCall{shellT, gh}, Denied: true}
	if got, ok := ChatRefusals(kiro, []string{"execute", "@github/*"}, ""); !ok || len(got) != 2 {
		t.Errorf("every refused tool denied: %q %v", got, ok)
	}
	if _, ok := ChatRefusals(kiro, []string{"shell"}, Fail); ok {
		t.Error("a refused tool nothing denied passed")
	}
	if got, ok := ChatRefusals(kiro, nil, Deny); !ok || got[0] != `"shell" (execute)` {
		t.Errorf("--on-permission deny: %q %v", got, ok)
	}
	q := &agent.UntrustedToolError{Command: "q", Tools: []agent.ToolCall{shellT}}
	if _, ok := ChatRefusals(q, []string{"shell"}, Deny); ok {
		t.Error("q stopped at the tool: that is a failure")
	}
	if _, ok := ChatRefusals(errors.New("other"), []string{"shell"}, Deny); ok {
		t.Error("another error passed")
	}
}

// TestToolNamesFromTheDescription: the names --trust-tools is offered follow the agent as
// agent.Describe reads agent.command, not the command's spelling: kiro-cli under another case or
// path has kiro's names, q has q's, and another ACP agent (a command line) the usual names of the
// ACP kinds, not q's.
func TestToolNamesFromTheDescription(t *testing.T) {
	for _, c := range []struct {
		command   string
		want, not []string
	}{
		{"q", []string{"fs_read", "execute_bash"}, []string{"shell"}},
		{"kiro-cli", []string{"read", "shell", "web_fetch"}, []string{"fs_read"}},
		{"/opt/tools/Kiro-CLI", []string{"read", "shell", "web_fetch"}, []string{"fs_read", "execute_bash"}},
		{"goose acp", []string{"read", "write", "shell", "execute", "edit"}, []string{"fs_read", "execute_bash", "use_aws"}},
		{"npx @zed-industries/claude-code-acp", []string{"shell", "edit"}, []string{"fs_write", "aws"}},
	} {
		names := ToolNames(c.command)
		for _, w := range c.want {
			if !slices.Contains(names, w) {
				t.Errorf("%s: %v lacks %q", c.command, names, w)
			}
		}
		for _, n := range c.not {
			if slices.Contains(names, n) {
				t.Errorf("%s: %v has %q, another agent's name", c.command, names, n)
			}
		}
	}
}
