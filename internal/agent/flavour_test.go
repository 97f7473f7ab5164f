package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// flavour sets up the fake as q or kiro-cli (FAKEQ_FLAVOUR) with env on top.
func flavour(t *testing.T, f string, env ...string) Limits {
	t.Helper()
	l := fake(t)
	l.Command = fakeqtest.Flavour(t, f, env...)
	return l
}

var flavours = []string{"q", "kiro"}

func TestFlavourReplyIsTheAnswer(t *testing.T) {
	for _, f := range flavours {
		l := flavour(t, f, `FAKEQ_OUTPUT=The answer.\nSecond line.\n`, "FAKEQ_TOOLS=fs_read,@git/status")
		var streamed strings.Builder
		var events []string
		res, err := Stream(t.Context(), l, Request{Prompt: "p", TrustTools: []string{"fs_read", "@git/status"}}, func(e Event) {
			if e.Type == EventMessage {
				streamed.WriteString(e.Text)
				return
			}
			events = append(events, string(e.Type)+" "+e.Tool.ID+" "+e.Tool.Status)
		})
		want := "Let me use the tools for that.\n\nThe answer.\nSecond line.\n"
		if err != nil || res.Output != want || streamed.String() != want {
			t.Fatalf("%s: err %v output %q streamed %q", f, err, res.Output, streamed.String())
		}
		if got := strings.Join(events, ","); got != "tool_call 1 in_progress,tool_call_update 1 completed,tool_call 2 in_progress,tool_call_update 2 completed" {
			t.Fatalf("%s: events %s", f, got)
		}
		uses := res.ToolUses()
		if len(uses) != 2 || uses[1] != (ToolUse{Name: "status", Server: "git", Trusted: true}) {
			t.Fatalf("%s: tools %+v", f, uses)
		}
	}
}

func TestFlavourUntrustedTool(t *testing.T) {
	// q stops with its approval error: an UntrustedToolError, not denied.
	l := flavour(t, "q", "FAKEQ_TOOLS=fs_read,@git/status", "FAKEQ_OUTPUT=done")
	res, err := Run(t.Context(), l, Request{Prompt: "p", TrustTools: []string{"fs_read", "status"}}, nil)
	var ut *UntrustedToolError
	if !errors.As(err, &ut) || ut.Denied || ut.TrustTools() != "--trust-tools=@git/status" || res.ExitCode != 1 {
		t.Fatalf("q: %v %+v", err, res)
	}
	// Trusted as @server/tool, it runs.
	if _, err := Run(t.Context(), l, Request{Prompt: "p", TrustTools: []string{"fs_read", "@git/status"}}, nil); err != nil {
		t.Fatal(err)
	}
	// kiro denies it and exits 0: still a failure, with the reply kept.
	l = flavour(t, "kiro", "FAKEQ_TOOLS=shell", "FAKEQ_OUTPUT=I could not run it, but all is well.")
	res, err = Run(t.Context(), l, Request{Prompt: "p"}, nil)
	if !errors.As(err, &ut) || !ut.Denied || ut.TrustTools() != "--trust-tools=shell" || ut.Tool().Name != "shell" ||
		!strings.Contains(err.Error(), "kiro") && !strings.Contains(err.Error(), "refused tool shell") || !strings.Contains(res.Output, "all is well") {
		t.Fatalf("kiro: %v %+v", err, res)
	}
	if !strings.Contains(err.Error(), "refused tool shell") || ut.Hint(CLITrustFlags) != "to allow it, run again with --trust-tools shell (or --yolo to trust every tool)" {
		t.Fatalf("kiro message: %v", err)
	}
	if len(res.Tools) != 1 || !res.Tools[0].Denied || res.Tools[0].Status != ToolFailed {
		t.Fatalf("kiro tools %+v", res.Tools)
	}
}

func TestFlavourFailuresAfterPartialReply(t *testing.T) {
	for _, f := range flavours {
		for _, kind := range []string{"auth", "api"} {
			l := flavour(t, f, "FAKEQ_FAIL="+kind, "FAKEQ_OUTPUT=partial answer")
			res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
			var le *LoginError
			var re *ReplyError
			ok := kind == "auth" && errors.As(err, &le) || kind == "api" && errors.As(err, &re) && re.Partial
			if !ok || res.Output != "partial answer" || res.ExitCode != 0 {
				t.Fatalf("%s %s: %v %+v", f, kind, err, res)
			}
		}
	}
	// An expired token before any reply (empty stdout, exit 0) is a login failure too.
	for _, f := range flavours {
		res, err := Run(t.Context(), flavour(t, f, "FAKEQ_FAIL=auth"), Request{Prompt: "p"}, nil)
		var le *LoginError
		if !errors.As(err, &le) || res.Output != "" || res.ExitCode != 0 {
			t.Fatalf("%s auth, no reply: %v %+v", f, err, res)
		}
	}
	// q's false approval error after a trusted tool is an ordinary failure.
	l := flavour(t, "q", "FAKEQ_TOOLS=fs_read", "FAKEQ_FAIL=stream", "FAKEQ_OUTPUT=partial")
	_, err := Run(t.Context(), l, Request{Prompt: "p", TrustAll: true}, nil)
	var ut *UntrustedToolError
	if err == nil || errors.As(err, &ut) || !strings.Contains(err.Error(), "having trouble responding") {
		t.Fatalf("false approval: %v", err)
	}
}

func TestFlavourUnknownAgent(t *testing.T) {
	for _, f := range flavours {
		l := flavour(t, f, "FAKEQ_AGENTS=dev", "FAKEQ_OUTPUT=reply")
		_, err := Run(t.Context(), l, Request{Prompt: "p", Agent: "reviewer"}, nil)
		var ae *AgentNotFoundError
		if !errors.As(err, &ae) || ae.Agent != "reviewer" || !strings.Contains(err.Error(), `"reviewer"`) {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := Run(t.Context(), l, Request{Prompt: "p", Agent: "dev"}, nil); err != nil {
			t.Fatalf("%s known agent: %v", f, err)
		}
	}
}

// kiro without a credential would wait forever for a device login: the run fails at once.
func TestFlavourDeviceLoginFailsFast(t *testing.T) {
	l := flavour(t, "kiro", "FAKEQ_LOGGED_OUT=1")
	l.Timeout = time.Minute // a hang shows as TimedOut
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
	var le *LoginError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "KIRO_API_KEY") || res.TimedOut {
		t.Fatalf("%v %+v", err, res)
	}
}

// --verbose: q's log lines on stdout stay in the reply (they were asked for); the "> " still goes.
func TestFlavourVerbose(t *testing.T) {
	l := flavour(t, "q", "FAKEQ_OUTPUT=The answer.")
	res, err := Run(t.Context(), l, Request{Prompt: "p", Verbose: true}, nil)
	if err != nil || !strings.HasSuffix(res.Output, "verbose logging on stdout\nThe answer.") || strings.Contains(res.Output, "> ") {
		t.Fatalf("%v %q", err, res.Output)
	}
}

// A kiro-cli that waits for a login without saying so: after LoginProbeAfter of silence, whoami is
// asked, and a logged-out answer stops the run. A logged-in agent that is merely slow goes on.
func TestFlavourSilentLoginProbe(t *testing.T) {
	l := flavour(t, "kiro", "FAKEQ_LOGGED_OUT=1", "FAKEQ_LOGIN_SILENT=1")
	l.LoginProbeAfter = 100 * time.Millisecond
	res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
	var le *LoginError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `printed nothing for 100ms and agent.test whoami says "Not logged in"`) ||
		!strings.Contains(err.Error(), "KIRO_API_KEY") || res.TimedOut {
		t.Fatalf("%v %+v", err, res)
	}
	rec := filepath.Join(t.TempDir(), "argv")
	l = flavour(t, "kiro", "FAKEQ_OUTPUT=slow answer", "FAKEQ_DELAY=300ms", "FAKEQ_RECORD="+rec)
	l.LoginProbeAfter = 50 * time.Millisecond
	if res, err := Run(t.Context(), l, Request{Prompt: "p"}, nil); err != nil || res.Output != "slow answer" {
		t.Fatalf("slow but logged in: %v %q", err, res.Output)
	}
	if data, _ := os.ReadFile(rec); !strings.Contains(string(data), `["whoami"]`) {
		t.Fatalf("no whoami asked: %s", data)
	}
}

// An empty reply with nothing but the welcome text on stderr is a failure that shows the end of
// stderr, not the whole welcome.
func TestFlavourEmptyReply(t *testing.T) {
	l := flavour(t, "kiro")
	_, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
	if err == nil || !strings.Contains(err.Error(), "printed no reply: ") || strings.Contains(err.Error(), "Welcome") ||
		!strings.HasSuffix(err.Error(), "▸ Credits: 0.12 • Time: 1s") {
		t.Fatalf("%v", err)
	}
}

// TestFlavourHostileToolName: a tool name that carries an escape sequence as the agent prints it
// is shown filtered (Name "shell") but kept as the agent has it (AgentName), so it is never taken
// for the tool the shown name trusts: it is not Trustable, the hint offers no --trust-tools name
// for it but says why, and --trust-tools refuses such a name before anything runs.
func TestFlavourHostileToolName(t *testing.T) {
	for _, f := range flavours {
		l := flavour(t, f, "FAKEQ_TOOLS=sh\x1b[2Jell,fs_read", "FAKEQ_OUTPUT=done")
		_, err := Run(t.Context(), l, Request{Prompt: "p"}, nil)
		var ut *UntrustedToolError
		if !errors.As(err, &ut) {
			t.Fatalf("%s: %v", f, err)
		}
		tool := ut.Tools[0]
		if tool.Name != "shell" || tool.AgentName != "sh\x1b[2Jell" || tool.AgentTrustName() != "sh\x1b[2Jell" || tool.Trustable() {
			t.Fatalf("%s: tool %+v", f, tool)
		}
		if names := ut.TrustNames(); slices.Contains(names, "shell") {
			t.Fatalf("%s: trust names %q", f, names)
		}
		hint := ut.Hint(CLITrustFlags)
		if !strings.Contains(hint, "the agent's own name for shell holds characters that --trust-tools cannot carry") ||
			strings.Contains(hint, "\x1b") || strings.Contains(hint, "--trust-tools shell") {
			t.Fatalf("%s: hint %q", f, hint)
		}
		// A plain name passes as it is: AgentName stays empty.
		l = flavour(t, f, "FAKEQ_TOOLS=@git/status", "FAKEQ_OUTPUT=done")
		if _, err := Run(t.Context(), l, Request{Prompt: "p"}, nil); !errors.As(err, &ut) || ut.Tools[0].AgentName != "" || !ut.Tools[0].Trustable() {
			t.Fatalf("%s: plain: %v", f, err)
		}
	}
	for _, bad := range []string{"sh\x1b[2Jell", "a b", "tab\tname", "bidi\u202eevil", "nul\x00"} {
		err := Validate(Limits{Command: "q"}, Request{Prompt: "p", TrustTools: []string{"fs_read", bad}})
		if err == nil || !strings.Contains(err.Error(), "invalid tool name") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if err := Validate(Limits{Command: "q"}, Request{Prompt: "p", TrustTools: []string{"fs_read, @git/status", "@github/*"}}); err != nil {
		t.Fatal(err)
	}
}

func TestPlainToolName(t *testing.T) {
	for n, want := range map[string]bool{
		"shell": true, "@git/status": true, "fs_read": true, "@srv": true, "outil_é": true,
		"": false, "a,b": false, "a b": false, "sh\x1b[2Jell": false, "x\u202e": false, "x\x7f": false, "\xff": false, "a\u00a0b": false,
	} {
		if got := PlainToolName(n); got != want {
			t.Errorf("PlainToolName(%q) = %v", n, got)
		}
	}
}

func TestUnpaint(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[35m🛠️  Using tool: sh\x1b[2Jell\x1b[0m": "🛠️  Using tool: sh\x1b[2Jell",
		"\x1b[38;5;141mplain\x1b[0m":                  "plain",
		"a\x1b[":                                      "a\x1b[",
		"no colour":                                   "no colour",
	} {
		if got := unpaint(in); got != want {
			t.Errorf("unpaint(%q) = %q", in, got)
		}
	}
}
