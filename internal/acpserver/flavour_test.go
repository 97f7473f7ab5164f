package acpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// The text path (`chat --no-interactive`) against q 1.19.7 and kiro-cli 2.x: what either reports
// at exit 0 is a failure that ends the turn with refusal, after the partial reply, and says what
// to do; a prompt over the agent's cut is refused before anything runs. TestMain makes every agent
// run this test binary; fakeqtest.Knobs, or newFakeAgent for a parallel test, sets its flavour and
// knobs.

// An expired login and an API error, each at exit 0 after a partial reply: the partial reply
// reaches the editor, then the failure; the turn ends with refusal.
func TestTextPathFailuresAfterPartialReply(t *testing.T) {
	t.Parallel()
	name := filepath.Base(os.Args[0])
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			q := newFakeAgent(t, f, "FAKEQ_OUTPUT=partial answer\n")
			h := startWith(t, "", useAgent(q))
			h.initialize()
			for _, c := range []struct{ fail, want string }{
				{"auth", name + " is not logged in (Authentication "},
				{"api", name + " failed after a partial reply: "},
			} {
				q.Set("FAKEQ_FAIL=" + c.fail)
				id := h.newSession(t.TempDir())
				h.mustPrompt(id, "hi", acp.StopReasonRefusal)
				got := h.tc.agentText(id)
				if !strings.HasPrefix(got, "partial answer\n") || !strings.Contains(got, c.want) || strings.Count(got, "partial answer") != 1 {
					t.Fatalf("%s: reply %q, want the partial reply, then %q", c.fail, got, c.want)
				}
				if c.fail == "auth" && !strings.Contains(got, "KIRO_API_KEY") {
					t.Fatalf("auth: %q does not say how to log in", got)
				}
			}
		})
	}
}

// An --agent the agent does not know (q warns and falls back, kiro exits 4) fails the turn,
// naming the agent.
func TestTextPathUnknownAgent(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			q := newFakeAgent(t, f, "FAKEQ_OUTPUT=default agent's answer", "FAKEQ_AGENTS=dev")
			h := startWith(t, "", func(o *Options) { useAgent(q)(o); o.Agent = "reviewer" })
			h.initialize()
			id := h.newSession(t.TempDir())
			h.mustPrompt(id, "hi", acp.StopReasonRefusal)
			if got := h.tc.agentText(id); !strings.Contains(got, `has no agent named "reviewer" (--agent)`) {
				t.Fatalf("reply %q", got)
			}
			h = startWith(t, "", func(o *Options) { useAgent(q)(o); o.Agent = "dev" })
			h.initialize()
			h.mustPrompt(h.newSession(t.TempDir()), "hi", acp.StopReasonEndTurn)
		})
	}
}

// kiro-cli with no credential at all would wait forever for a device login: the turn ends at once
// (the timeout is far longer) with how to log in, whether kiro prints its login URL or waits
// without a word (whoami after a silence). The login went away after initialize checked it.
func TestTextPathKiroDeviceLogin(t *testing.T) {
	for _, silent := range []string{"", "1"} {
		fakeqtest.Knobs(t, "kiro", "FAKEQ_OUTPUT=the answer")
		h := startWith(t, "", func(o *Options) {
			o.Limits.Timeout = 10 * time.Minute
			// The probe is what finds the silent login; the printed one is found on stderr,
			// and there the probe must not come first on a loaded machine (yet it ends the
			// turn, with another message, should stderr go unread).
			o.Limits.LoginProbeAfter = 30 * time.Second
			if silent != "" {
				o.Limits.LoginProbeAfter = 100 * time.Millisecond
			}
		})
		h.initialize()
		id := h.newSession(t.TempDir())
		t.Setenv("FAKEQ_LOGGED_OUT", "1")
		t.Setenv("FAKEQ_LOGIN_SILENT", silent)
		h.mustPrompt(id, "hi", acp.StopReasonRefusal)
		got := h.tc.agentText(id)
		want := "it started a device login, which waits for a browser; qkit stopped it"
		if silent != "" {
			want = `it printed nothing for 100ms and ` + filepath.Base(os.Args[0]) + ` whoami says "Not logged in"; qkit stopped it`
		}
		if !strings.Contains(got, "is not logged in ("+want+"): run ") || !strings.Contains(got, "KIRO_API_KEY") ||
			strings.Contains(strings.ToLower(got), "timed out") {
			t.Fatalf("silent=%q: reply %q", silent, got)
		}
	}
}

// A prompt over q's 400,000-byte cut is refused before the agent runs, with its size and the
// budget setting; one at the cut goes through whole.
func TestTextPathPromptTooLong(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"q", "kiro"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			file, runs := recorded(t)
			q := newFakeAgent(t, f, "FAKEQ_OUTPUT=ok", "FAKEQ_RECORD="+file)
			h := startWith(t, "", func(o *Options) { o.Limits.Command = q.Command })
			h.initialize()
			id := h.newSession(t.TempDir())
			h.mustPrompt(id, strings.Repeat("a", 400_001), acp.StopReasonRefusal)
			if got := h.tc.agentText(id); !strings.Contains(got, "400001 bytes, over the 400000 bytes") || !strings.Contains(got, "context.max_tokens") {
				t.Fatalf("reply %q", got)
			}
			if n := len(runs()); n != 0 {
				t.Fatalf("the agent ran %d times", n)
			}
			q.Set("FAKEQ_OUTPUT=", "FAKEQ_ECHO_PROMPT=1")
			id = h.newSession(t.TempDir())
			h.mustPrompt(id, strings.Repeat("a", 400_000), acp.StopReasonEndTurn)
			if got := h.tc.agentText(id); strings.TrimSpace(got) != strings.Repeat("a", 400_000) {
				t.Fatalf("the prompt at the cut came back with %d bytes", len(got))
			}
		})
	}
}
