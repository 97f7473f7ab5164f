package cmd

import (
	"context"
	"errors"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// askSessionRef is what ask --session names, once the store has been asked: the store's session
// (empty: an agent session id the store does not know, passed on as it was), the agent session to
// load, and the transcript to put before the prompt when there is none to load.
type askSessionRef struct {
	id           string
	agentSession string
	history      []sessions.Message
}

// resolveAskSession looks ask --session's id up in the session store: a session id or prefix of
// any front end (acp serve, an import) goes on there; a session whose folder no longer exists is
// refused (exit 4); an id the store does not know is taken as the agent's own session id.
func resolveAskSession(ctx context.Context, a *app.App, id string) (askSessionRef, error) {
	if id == "" {
		return askSessionRef{}, nil
	}
	st, err := openSessions(ctx, a)
	if err != nil {
		return askSessionRef{}, err
	}
	defer st.Close()
	c, err := st.Continue(ctx, id)
	switch {
	case errors.Is(err, sessions.ErrSessionNotFound):
		return askSessionRef{agentSession: id}, nil
	case errors.Is(err, sessions.ErrFolderGone):
		return askSessionRef{}, output.NotFoundf("--session %s: %s; qkit sessions show %s has its transcript",
			termtext.VisibleLine(id), termtext.VisibleLine(err.Error()), termtext.VisibleLine(id))
	case err != nil:
		return askSessionRef{}, sessionError(err)
	}
	return askSessionRef{id: c.Session.ID, agentSession: c.AgentSession, history: c.History}, nil
}

// withHistory puts the session's transcript before prompt when the agent has no session of its own
// to load (an imported session, one of acp serve's text path), within context.max_tokens.
func (ref askSessionRef) withHistory(a *app.App, prompt string) string {
	if len(ref.history) == 0 {
		return prompt
	}
	p, _ := sessions.WithHistory(ref.history, prompt, max(int(config.ContextMaxTokens.Get(a.Config)), 1)*4/2)
	return p
}

// recordAsk stores ask's turn on the ACP backend in the session store (origin ask): appended to
// the session --session or --resume named, or a new session under the agent's session id. A store
// that cannot be written costs a warning, not the run.
func recordAsk(ctx context.Context, a *app.App, ref askSessionRef, dir string, prompt string, r agent.Request, run askrun.Run) {
	if run.SessionID == "" {
		return
	}
	ex := sessions.Exchange{
		ID: ref.id, AgentSession: run.SessionID, Origin: sessions.OriginAsk, Cwd: dir, Backend: sessions.BackendACP,
		Model: r.Model, TrustedTools: r.TrustTools,
		Turn: sessions.Turn{Prompt: prompt, Reply: run.Agent.Body(), Tools: sessions.ToolCallsOf(run.Agent.Tools), Usage: sessions.UsageOf(run.Usage)},
	}
	if _, err := sessions.Record(context.WithoutCancel(ctx), sessionsPath(a), ex, a.Now()); err != nil {
		a.Warnf("the session was not recorded in qkit sessions: %v", err)
	}
}
