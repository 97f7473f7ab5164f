// Package approval decides an ACP agent's permission requests for a headless run (`qkit ask` on
// the ACP backend), without re-running anything: the flags decide what they cover (--yolo,
// --trust-tools, --deny-tools; a denial wins), and whatever is left goes by --on-permission:
// fail (stop the turn, naming the tool and the flag that trusts it), deny (reject, and the agent
// carries on), or ask (a person decides, through the questions store or at the terminal: allow
// once, allow always for this run, or reject).
package approval

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// The --on-permission values.
const (
	Fail = "fail"
	Deny = "deny"
	Ask  = "ask"
)

// Modes are the --on-permission values, for help and completion.
var Modes = []string{Fail, Deny, Ask}

// What a person can answer.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always" // for the rest of this run
	Reject      = "reject"
)

// Asker puts a permission request to a person and returns AllowOnce, AllowAlways or Reject.
type Asker interface {
	AskPermission(ctx context.Context, req acpclient.PermissionRequest) (string, error)
}

// Policy decides permission requests. Its zero value fails every request.
type Policy struct {
	// TrustAll allows everything (--yolo).
	TrustAll bool
	// Trust and Deny are tool patterns (--trust-tools, --deny-tools); see Matches.
	Trust, Deny []string
	// OnPermission is fail, deny or ask, for what the flags do not cover.
	OnPermission string
	// Asker is used with ask.
	Asker Asker
	// Flags are how the front end names the options above, for the hints in its errors
	// (NeedsPermissionError, UnaskedError); zero: qkit ask's flags.
	Flags agent.TrustFlags

	always Grants // tools a person allowed for the rest of the run (their TrustName)

	mu      sync.Mutex
	denied  []string      // tools denied (their labels), for the result
	refused []string      // writes and commands refused (Access), for the result
	failed  *UnaskedError // the first of them under --on-permission fail
}

// NeedsPermissionError is a tool nothing allowed, with --on-permission fail.
type NeedsPermissionError struct {
	Tool agent.ToolCall
	// Trusted is what the run trusted (--trust-tools), for the hint's whole value.
	Trusted []string
	// Flags name the front end's options in the hint (Policy.Flags; zero: qkit ask's).
	Flags agent.TrustFlags
}

func (e *NeedsPermissionError) Error() string {
	name, f := TrustName(e.Tool), e.Flags.Or()
	// The label is quoted already; the hint's name may be the agent's title as it is.
	hint := agent.TrustHint(e.Trusted, []string{name}, f)
	if f.OnPermission == "" {
		return termtext.StripString(fmt.Sprintf("the agent asked to run %s, which needs permission: nothing allowed it; %s", label(e.Tool), hint))
	}
	return termtext.StripString(fmt.Sprintf("the agent asked to run %s, which needs permission: nothing allowed it and %s is fail; "+
		"%s; or use %s ask to decide, or deny to refuse it and carry on", label(e.Tool), f.OnPermission, hint, f.OnPermission))
}

// Decide answers one request (acpclient.PermissionFunc).
func (p *Policy) Decide(ctx context.Context, req acpclient.PermissionRequest) (acpclient.Decision, error) {
	switch {
	case Matches(p.Deny, req.Tool):
		return p.reject(req, "policy")
	case p.TrustAll || Matches(p.Trust, req.Tool) || p.always.Covers(req.Tool):
		return allow(req, AllowAlways, "policy")
	}
	switch p.OnPermission {
	case Deny:
		return p.reject(req, "policy")
	case Ask:
		if p.Asker == nil {
			return acpclient.Decision{}, fmt.Errorf("--on-permission ask: nobody to ask")
		}
		answer, err := p.Asker.AskPermission(ctx, req)
		if err != nil {
			return acpclient.Decision{By: "person"}, err
		}
		switch answer {
		case AllowAlways:
			p.always.Allow(req.Tool)
			return allow(req, AllowAlways, "person")
		case AllowOnce:
			return allow(req, AllowOnce, "person")
		default:
			return p.reject(req, "person")
		}
	default:
		return acpclient.Decision{By: "policy"}, &NeedsPermissionError{Tool: req.Tool, Trusted: p.Trust, Flags: p.Flags}
	}
}

// Denied lists the tools that were denied, in order.
func (p *Policy) Denied() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.denied)
}

func (p *Policy) reject(req acpclient.PermissionRequest, by string) (acpclient.Decision, error) {
	p.mu.Lock()
	p.denied = append(p.denied, label(req.Tool))
	p.mu.Unlock()
	for _, kind := range []string{"reject_once", "reject_always"} {
		if id := option(req, kind); id != "" {
			return acpclient.Decision{OptionID: id, By: by}, nil
		}
	}
	return acpclient.Decision{Cancelled: true, By: by}, nil // no reject option: cancelled refuses too
}

// allow picks the agent's option for want (allow_always for a trusted tool, so the agent stops
// asking), or the other allow option when it offers only one.
func allow(req acpclient.PermissionRequest, want, by string) (acpclient.Decision, error) {
	other := AllowOnce
	if want == AllowOnce {
		other = AllowAlways
	}
	for _, kind := range []string{want, other} {
		if id := option(req, kind); id != "" {
			return acpclient.Decision{OptionID: id, By: by}, nil
		}
	}
	return acpclient.Decision{By: by}, fmt.Errorf("the agent offered no way to allow %s (options: %s)", label(req.Tool), optionKinds(req))
}

func option(req acpclient.PermissionRequest, kind string) string {
	for _, o := range req.Options {
		if o.Kind == kind {
			return o.ID
		}
	}
	return ""
}

func optionKinds(req acpclient.PermissionRequest) string {
	var kinds []string
	for _, o := range req.Options {
		kinds = append(kinds, o.Kind)
	}
	return strings.Join(kinds, ", ")
}

// kindNames are the agents' own tool names for each ACP tool kind (q's and kiro's), so
// --trust-tools=shell covers the execute call an ACP agent reports without its name.
var kindNames = map[string][]string{
	"execute": {"shell", "execute_bash", "execute_cmd"},
	"edit":    {"write", "fs_write"},
	"delete":  {"write", "fs_write"},
	"move":    {"write", "fs_write"},
	"read":    {"read", "fs_read"},
	"search":  {"grep", "glob"},
	"fetch":   {"web_fetch", "fetch"},
}

// ToolNames are the agent's own names for its built-in tools, what --trust-tools takes, for the
// agent agent.command describes (agent.Describe): kiro-cli 2.x has its own, q the rest. Another
// ACP agent's names are its own and unknown to qkit; its tool calls are matched by their ACP
// kind (see Names), so it is offered the kinds and their usual names.
func ToolNames(command string) []string {
	switch agent.Describe(command).Kind {
	case agent.KindKiro:
		return []string{"read", "write", "shell", "grep", "glob", "aws", "web_fetch", "web_search", "code", "knowledge", "todo", "delegate"}
	case agent.KindACP:
		return []string{"read", "write", "shell", "edit", "delete", "move", "execute", "search", "fetch"}
	}
	return []string{"fs_read", "fs_write", "execute_bash", "use_aws", "gh_issue", "knowledge", "thinking", "todo_list", "delegate"}
}

// DenyNames are what --deny-tools is offered: the agent's tool names (ToolNames), the usual names
// of the kinds (shell, write, read), and the ACP kinds an agent reports a tool call with.
func DenyNames(command string) []string {
	names := ToolNames(command)
	for _, n := range []string{"shell", "write", "read", "execute", "edit", "delete", "move", "search", "fetch"} {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Names are what a pattern can call a tool: its name (for an MCP tool also @server/name, which
// the agent trusts, server/name and @server; see agent.ToolCall.MCP), its ACP kind, the agents'
// names for that kind, and its title (an ACP agent often says no more than "Running: ls").
func Names(t agent.ToolCall) []string {
	var out []string
	if t.Title != "" {
		out = append(out, t.Title)
	}
	if t.Name != "" {
		out = append(out, t.Name)
	}
	if server, tool, ok := t.MCP(); ok {
		out = append(out, "@"+server, "@"+server+"/"+tool, server+"/"+tool)
	}
	if t.Kind != "" {
		out = append(out, t.Kind)
		out = append(out, kindNames[t.Kind]...)
	}
	return out
}

// TrustName is the name to give --trust-tools for t: its own name (@server/tool for an MCP tool,
// as the agent trusts it), else its kind's usual name, else its title.
func TrustName(t agent.ToolCall) string {
	if n := t.TrustName(); n != "" {
		return n
	}
	if names := kindNames[t.Kind]; len(names) > 0 {
		return names[0]
	}
	if t.Title != "" {
		return t.Title
	}
	if t.Kind != "" {
		return t.Kind
	}
	return "TOOL"
}

// Matches reports whether one of patterns names t. A pattern is a name (case-insensitive) or a
// shell glob (`@github/*`); a comma list counts as several.
func Matches(patterns []string, t agent.ToolCall) bool {
	names := Names(t)
	for _, p := range patterns {
		for _, one := range strings.Split(p, ",") {
			one = strings.ToLower(strings.TrimSpace(one))
			if one == "" {
				continue
			}
			for _, n := range names {
				n = strings.ToLower(n)
				if ok, _ := path.Match(one, n); ok || one == n {
					return true
				}
			}
		}
	}
	return false
}

func label(t agent.ToolCall) string {
	switch {
	case t.Title != "" && t.Kind != "":
		return fmt.Sprintf("%q (%s)", t.Title, termtext.VisibleLine(string(t.Kind)))
	case t.Title != "":
		return fmt.Sprintf("%q", t.Title)
	case t.Kind != "":
		return "a " + termtext.VisibleLine(string(t.Kind)) + " tool"
	}
	return "tool call " + termtext.VisibleLine(t.ID)
}

// Label names a tool call for a person.
func Label(t agent.ToolCall) string { return label(t) }

// ErrDenyWithTrustAll is --deny-tools with --yolo on the text backend: `chat --no-interactive`
// can trust every tool or a list of them, not every tool but some.
var ErrDenyWithTrustAll = errors.New("--deny-tools cannot be kept with --yolo on the chat backend " +
	"(chat --no-interactive trusts every tool or the ones listed, never all but some): " +
	"list the tools to trust with --trust-tools instead, or use --backend acp")

// ChatTrust applies deny patterns (--deny-tools, see Matches) to what the text backend is told to
// trust. That backend cannot be asked: a tool it does not trust is refused (kiro-cli) or fails the
// run (q), so dropping the denied names from trust is what denies them. A denial wins, as in
// Decide; with trustAll it cannot be kept, and ChatTrust returns ErrDenyWithTrustAll.
func ChatTrust(trustAll bool, trust, deny []string) ([]string, error) {
	if !slices.ContainsFunc(deny, func(d string) bool { return strings.Trim(d, ", ") != "" }) {
		return trust, nil
	}
	if trustAll {
		return nil, ErrDenyWithTrustAll
	}
	var kept []string
	for _, name := range agent.TrustList(trust) {
		if !Matches(deny, trustNameTool(name)) {
			kept = append(kept, name)
		}
	}
	return kept, nil
}

// trustNameTool is the tool a --trust-tools name stands for ("@server/tool" is an MCP tool), with
// the ACP kind its name is usual for (shell: execute), so a kind in --deny-tools covers it too.
func trustNameTool(name string) agent.ToolCall {
	if rest, ok := strings.CutPrefix(name, "@"); ok {
		server, tool, _ := strings.Cut(rest, "/")
		return agent.ToolCall{Name: tool, Server: server}
	}
	t := agent.ToolCall{Name: name}
	for _, kind := range []string{"execute", "edit", "read", "search", "fetch"} {
		if slices.Contains(kindNames[kind], name) {
			t.Kind = kind
		}
	}
	return t
}

// ChatRefusals says whether a text-backend run that failed only because the agent refused tools
// it did not trust (kiro-cli's denial, after which it carries on) did what the policy asked:
// onPermission is deny, or deny names every refused tool. Then the run is no failure, as a
// rejection on the ACP backend is none, and ChatRefusals returns the refused tools' labels. An
// agent that stopped at the tool (q's approval error) failed whatever the policy.
func ChatRefusals(err error, deny []string, onPermission string) ([]string, bool) {
	var ut *agent.UntrustedToolError
	if !errors.As(err, &ut) || !ut.Denied || len(ut.Tools) == 0 {
		return nil, false
	}
	var labels []string
	for _, t := range ut.Tools {
		if onPermission != Deny && !Matches(deny, t) {
			return nil, false
		}
		labels = append(labels, label(t))
	}
	return labels, true
}

// KindName is the usual name of the agent's tools of an ACP kind (execute: shell, edit: write),
// the name a tool of that kind is trusted under; empty for a kind without one.
func KindName(kind string) string {
	if names := kindNames[kind]; len(names) > 0 {
		return names[0]
	}
	return ""
}

// Named is t under the name it is trusted by when the agent gave it none (an ACP tool call has a
// title and a kind): the name the chat backend reports it by. An MCP tool keeps its own.
func Named(t agent.ToolCall) agent.ToolCall {
	if _, _, mcp := t.MCP(); t.Name == "" && !mcp {
		t.Name = KindName(t.Kind)
	}
	return t
}

// Trusts says whether the policy trusts t without asking anyone (TrustAll or Trust names it, and
// Deny does not): what a tool's trusted means on the chat backend, where the agent ran it so.
func (p *Policy) Trusts(t agent.ToolCall) bool {
	return !Matches(p.Deny, t) && (p.TrustAll || Matches(p.Trust, t))
}
