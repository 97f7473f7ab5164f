package askrun

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// Store is qkit's session store as a run uses it: internal/sessions' PathStore, or in the light
// binary, which links no SQLite, a sessionrec.Spool (which only records; ask hands --session to
// qkit-full).
type Store interface {
	// Continue finds a stored session by id or unambiguous prefix (errors: sessionrec's
	// ErrSessionNotFound, ErrAmbiguous, ErrFolderGone).
	Continue(ctx context.Context, id string) (sessionrec.Continuation, error)
	// Messages is a stored session's transcript.
	Messages(ctx context.Context, id string) ([]sessionrec.Message, error)
	// Record stores one exchange and returns its session's id.
	Record(ctx context.Context, ex sessionrec.Exchange, now time.Time) (string, error)
}

// Sessions ties a run to qkit's session store (`qkit sessions`): Options.SessionID is first looked
// up there, and the run's turn is recorded there afterwards.
type Sessions struct {
	// Store is where sessions are looked up and recorded.
	Store Store
	// Origin is the front end the turn is recorded under (sessionrec.OriginAsk, sessionrec.OriginMCP).
	Origin string
	// Prompt is the prompt as recorded: the user's, without the context files (empty: the request's).
	Prompt string
	// Continue appends a run that names no session to the latest session of Origin in the folder
	// (the MCP tool's resume, which q continues the same way).
	Continue bool
	// Chat records runs on the chat backend too (they have no agent session: continuing one
	// replays its history); otherwise only ACP runs, which leave an agent session, are recorded.
	Chat bool
	// KnownOnly refuses a SessionID the store does not know (exit 4) instead of passing it on to
	// the agent as its own session id.
	KnownOnly bool
	// Name is how the front end calls SessionID in its messages ("--session", "session_id").
	Name string
	// HistoryBytes bounds the transcript put before the prompt when the stored session has no agent
	// session to load.
	HistoryBytes int
	// Now is the clock of the recorded times (nil: time.Now).
	Now func() time.Time
}

// OneSession refuses a run given both a session to load (session, under the front end's
// sessionName: --session, session_id) and the folder's last one to resume (resume, resumeName:
// --resume, resume), in the same words on every front end.
func OneSession(session string, resume bool, sessionName, resumeName string) error {
	if session == "" || !resume {
		return nil
	}
	return output.UsageErrorf("%s and %s contradict each other: %s loads the session it names, %s this directory's last one; give one",
		sessionName, resumeName, sessionName, resumeName)
}

// resolveSession looks o.SessionID up in the store, before the backend is chosen: a stored
// session (an id or unambiguous prefix of any front end) is kept in o.continued, its agent session
// in o.SessionID, for continueSession to go on with on whichever backend the run takes. A session
// whose folder is gone is refused (exit 4). It returns the stored session's id ("" when the store
// does not know the id: then o.SessionID is the agent's own, which only the acp backend can load).
func (o *Options) resolveSession(ctx context.Context) (string, error) {
	s := o.Sessions
	if s == nil || o.SessionID == "" {
		return "", nil
	}
	id := termtext.VisibleLine(o.SessionID)
	c, err := s.Store.Continue(ctx, o.SessionID)
	switch {
	case errors.Is(err, sessionrec.ErrSessionNotFound) && !s.KnownOnly:
		return "", nil // the agent's own session id, passed on as it was
	case errors.Is(err, sessionrec.ErrSessionNotFound):
		return "", output.NotFoundf("%s %s: no such session: see qkit sessions list", s.Name, id)
	case errors.Is(err, sessionrec.ErrAmbiguous):
		return "", output.UsageErrorf("%s %s: %s", s.Name, id, termtext.VisibleLine(err.Error()))
	case errors.Is(err, sessionrec.ErrFolderGone):
		return "", output.NotFoundf("%s %s: %s; qkit sessions show %s has its transcript", s.Name, id, termtext.VisibleLine(err.Error()), id)
	case err != nil:
		return "", err
	}
	// A session goes on in its own folder, as acp serve's session/load insists: continued from
	// another one, the agent would work on another project with this one's conversation, and
	// the turn would land in a session about something else.
	dir, err := o.dir()
	if err != nil {
		return "", err
	}
	if c.Session.Cwd != "" && !sessionrec.SameFolder(c.Session.Cwd, dir) {
		return "", output.UsageErrorf("%s %s: the session belongs to the folder %s, not %s: continue it there",
			s.Name, id, termtext.VisibleLine(c.Session.Cwd), termtext.VisibleLine(dir))
	}
	o.SessionID, o.continued = c.AgentSession, &c
	return c.Session.ID, nil
}

// continueSession goes on with the stored session resolveSession found, on the backend the run
// took (whatever agent.backend says: under auto, the one chosen for this agent): on acp in its
// agent session; on chat, or when it has none (an import, acp serve's text path), in a new one
// with its transcript before the prompt. ask and the MCP tool go on the same way.
func (o *Options) continueSession(ctx context.Context, backend string) error {
	c, s := o.continued, o.Sessions
	if c == nil {
		return nil
	}
	if o.SessionID != "" && backend != acpclient.BackendACP {
		// chat cannot load an agent session: the transcript goes before the prompt instead.
		var err error
		if c.History, err = s.Store.Messages(ctx, c.Session.ID); err != nil {
			return err
		}
		o.SessionID = ""
	}
	if s.Prompt == "" {
		s.Prompt = o.Request.Prompt
	}
	if len(c.History) > 0 {
		o.Request.Prompt, _ = sessionrec.WithHistory(c.History, o.Request.Prompt, max(s.HistoryBytes, 1))
	}
	o.continued = nil // once: a second backend choice (a stale probe) must not add the history again
	return nil
}

// recordSession stores the run's turn under the session it continued (stored), the agent session
// it ran in, or a new one, and returns the stored session's id. A run that left nothing is not
// recorded; a store that cannot be written costs a warning, never the run.
func (o *Options) recordSession(ctx context.Context, stored string, run Run) string {
	s := o.Sessions
	if s == nil {
		return ""
	}
	acp := run.Backend == acpclient.BackendACP
	// A chat run that continued a stored session is recorded under it, whatever Chat says: the
	// conversation went on there.
	if acp && run.SessionID == "" || !acp && (!s.Chat && stored == "" || strings.TrimSpace(run.Agent.Body()) == "") {
		return ""
	}
	prompt := s.Prompt
	if prompt == "" {
		prompt = o.Request.Prompt
	}
	backend := sessionrec.BackendText
	if acp {
		backend = sessionrec.BackendACP
	}
	var trusted []string
	for _, list := range o.Request.TrustTools {
		for _, t := range strings.Split(list, ",") {
			if t = strings.TrimSpace(t); t != "" {
				trusted = append(trusted, t)
			}
		}
	}
	if o.Request.TrustAll {
		trusted = append(trusted, "*")
	}
	dir, _ := o.dir()
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ex := sessionrec.Exchange{
		ID: stored, AgentSession: run.SessionID, Continue: s.Continue && stored == "", Origin: s.Origin, Cwd: dir, Backend: backend,
		Model: o.Request.Model, TrustedTools: trusted,
		Turn: sessionrec.Turn{Prompt: prompt, Reply: run.Agent.Body(), Tools: sessionrec.ToolCallsOf(run.Agent.Tools), Usage: sessionrec.UsageOf(run.Usage)},
	}
	// The ending the run's report gives (ask's stop_reason), by the rule every door records by.
	_, exitErr := Report(run)
	ex.Turn.Ended = sessionrec.Ending(run.Backend, run.StopReason, run.Agent.TimedOut, run.Interrupted, exitErr != nil)
	ex.Turn.Truncated = run.Agent.Truncated
	id, err := s.Store.Record(context.WithoutCancel(ctx), ex, now())
	if err != nil {
		o.warn("the session was not recorded in qkit sessions: %v", err)
	}
	return id
}
