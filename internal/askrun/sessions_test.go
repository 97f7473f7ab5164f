package askrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// oneSession is a store holding one session recorded on the ACP backend.
type oneSession struct{ c sessionrec.Continuation }

func (s oneSession) Continue(_ context.Context, id string) (sessionrec.Continuation, error) {
	if id != s.c.Session.ID {
		return sessionrec.Continuation{}, sessionrec.ErrSessionNotFound
	}
	return s.c, nil
}

func (s oneSession) Messages(context.Context, string) ([]sessionrec.Message, error) {
	return []sessionrec.Message{{Role: sessionrec.RoleUser, Text: "first question"}, {Role: sessionrec.RoleAgent, Text: "first answer"}}, nil
}

func (oneSession) Record(context.Context, sessionrec.Exchange, time.Time) (string, error) {
	return "", nil
}

// TestStoredACPSessionGoesOnOnTheChosenBackend: a session stored on ACP goes on in its agent
// session on acp and with its transcript on chat, decided by the backend the run takes, not by
// the setting: under auto an agent without ACP (here: nothing learned, so chat) got --session's
// "needs ACP" and a dry run showed the acp command line.
func TestStoredACPSessionGoesOnOnTheChosenBackend(t *testing.T) {
	dir := t.TempDir()
	store := oneSession{sessionrec.Continuation{Session: sessionrec.SessionRecord{ID: "s1", Cwd: dir, Backend: sessionrec.BackendACP, AgentSession: "agent-1"}, AgentSession: "agent-1"}}
	for _, tc := range []struct {
		setting, backend string
		history          bool
	}{
		{acpclient.BackendAuto, acpclient.BackendChat, true},
		{acpclient.BackendChat, acpclient.BackendChat, true},
		{acpclient.BackendACP, acpclient.BackendACP, false},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			o := Options{
				Limits: agent.Limits{Command: "q"}, Request: agent.Request{Prompt: "second question", Dir: dir},
				Backend: tc.setting, StateDir: t.TempDir(), SessionID: "s1",
				Sessions: &Sessions{Store: store, Origin: sessionrec.OriginAsk, Name: "--session", HistoryBytes: 1 << 16},
			}
			plan, err := DryRun(o)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Backend != tc.backend {
				t.Errorf("backend %s, want %s", plan.Backend, tc.backend)
			}
			if got := strings.Contains(plan.Prompt, "first answer"); got != tc.history {
				t.Errorf("the transcript before the prompt: %v, want %v; prompt %q", got, tc.history, plan.Prompt)
			}
			if !strings.HasSuffix(plan.Prompt, "second question") {
				t.Errorf("prompt %q does not end in the question", plan.Prompt)
			}
		})
	}
}
