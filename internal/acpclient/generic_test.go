package acpclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// genericAgent is the fake as a third-party ACP agent (FAKEQ_ACP_GENERIC), given as a command
// line: agent.command "<fake> acp".
func genericAgent(t *testing.T, env ...string) RunOptions {
	t.Helper()
	o := fake(t, append([]string{"FAKEQ_ACP_GENERIC=1"}, env...)...)
	o.Limits.Command = o.Limits.Command + " acp"
	return o
}

// An ACP agent given as a command line is run as given: no kiro launch flags (the fake refuses
// any), --agent becomes the session's mode and the model goes through its model option; no
// whoami, no probe.
func TestGenericAgentRun(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "argv")
	o := genericAgent(t, "FAKEQ_RECORD="+rec, "FAKEQ_OUTPUT=hi\\n", "FAKEQ_ACP_SAY_SETTINGS=1")
	o.Request.Agent, o.Request.Model, o.Request.TrustAll, o.Request.TrustTools = "plan", "gen-large", true, []string{"shell"}
	o.Limits.LoginProbeAfter = 1 // a whoami would be asked at once; there must be none
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "[mode plan, model gen-large]\nhi\n" || res.Agent != "Generic Agent 0.9.0" {
		t.Errorf("result %+v", res)
	}
	if data, _ := os.ReadFile(rec); strings.TrimSpace(string(data)) != `["acp"]` {
		t.Errorf("started with %s, want only its own command line", data)
	}
	if got := Argv(o.Limits, o.Request); strings.Join(got[1:], " ") != "acp" {
		t.Errorf("argv %q", got)
	}

	// A model or a mode the agent does not have fails the run, naming what it refused.
	o.Request.Model = "gpt-9"
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), `did not take model "gpt-9"`) {
		t.Errorf("unknown model: %v", err)
	}
	o.Request.Model, o.Request.Agent = "", "yolo"
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), `mode "yolo"`) || !strings.Contains(err.Error(), "plan") {
		t.Errorf("unknown mode: %v", err)
	}

	// Logged out, it says so its own way: the error is neutral (no kiro-cli login advice).
	o = genericAgent(t, "FAKEQ_LOGGED_OUT=1", "FAKEQ_OUTPUT=hi")
	_, err = Run(t.Context(), o)
	var login *agent.LoginError
	if !errors.As(err, &login) || strings.Contains(strings.ToLower(err.Error()), "kiro") || !strings.Contains(err.Error(), "generic agent's own account") {
		t.Errorf("logged out: %v", err)
	}
}

// agent.backend with an ACP agent given as a command line: auto is acp without a probe, chat is
// refused naming agent.backend.
func TestGenericAgentBackend(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "argv")
	o := genericAgent(t, "FAKEQ_RECORD="+rec)
	cache := BackendCacheFile(t.TempDir())
	c, err := ChooseBackend(t.Context(), BackendAuto, o.Limits.Command, cache, false, nil)
	if err != nil || c.Backend != BackendACP || c.Probed {
		t.Errorf("auto: %+v %v", c, err)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Error("the agent was started to choose its backend")
	}
	var noChat *agent.NoChatError
	if _, err := ChooseBackend(t.Context(), BackendChat, o.Limits.Command, cache, false, nil); !errors.As(err, &noChat) ||
		!strings.Contains(err.Error(), "agent.backend") {
		t.Errorf("chat: %v", err)
	}
	// One that does not answer initialize says to check agent.command.
	o = genericAgent(t, "FAKEQ_ACP_BAD=text")
	o.Limits.Grace = 200 * time.Millisecond // it never ends on its own: the grace is waited out whole
	var nacp *NotACPError
	if _, err := Run(t.Context(), o); !errors.As(err, &nacp) || !strings.Contains(err.Error(), "agent.command") {
		t.Errorf("not ACP: %v", err)
	}
}

// TestTypeScriptStandInGiven: the agent on the official TypeScript SDK, given as a whole command
// line (node, its script and its subcommand), runs with no wrapper: started as given, with no
// flags of kiro's.
func TestTypeScriptStandInGiven(t *testing.T) {
	t.Parallel()
	script := fakeqtest.TypeScriptAgent(t)
	o := fake(t, "TS_AGENT_CHUNKS=2")
	o.Limits.Command = "node " + shellquote.Join(script) + " acp"
	o.Request.TrustAll = true // would be -a for kiro; this agent is answered by the policy instead
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" || res.Agent != "ts-stand-in 1.0.0" || !strings.HasPrefix(res.Output, "chunk 1 of hello\n") ||
		strings.Join(res.Argv, " ") != "node "+script+" acp" {
		t.Errorf("result %+v", res)
	}
}
