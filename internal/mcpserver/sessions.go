package mcpserver

import (
	"context"
	"strings"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/sessions"
)

// recordQAgent stores a q-developer-agent call in qkit's session store (origin mcp): a new session
// per call, or, with resume, the latest one of this tool in the folder, as q continues it. A run
// that produced nothing is not recorded; a store that cannot be written is logged, never the
// tool's failure.
func recordQAgent(ctx context.Context, d *Deps, in qAgentInput, r agent.Request, res agent.Result) {
	if d.App.Config == nil || strings.TrimSpace(res.Body()) == "" {
		return
	}
	dir, err := d.App.WorkingDir()
	if err != nil {
		return
	}
	var trusted []string
	for _, list := range r.TrustTools {
		for _, t := range strings.Split(list, ",") {
			if t = strings.TrimSpace(t); t != "" {
				trusted = append(trusted, t)
			}
		}
	}
	if r.TrustAll {
		trusted = append(trusted, "*")
	}
	ex := sessions.Exchange{
		Continue: in.Resume, Origin: sessions.OriginMCP, Cwd: dir, Backend: sessions.BackendText, Model: r.Model, TrustedTools: trusted,
		Turn: sessions.Turn{Prompt: in.Prompt, Reply: res.Body(), Tools: sessions.ToolCallsOf(res.Tools)},
	}
	if _, err := sessions.Record(context.WithoutCancel(ctx), sessions.Path(d.App.Config.Paths.Data), ex, d.App.Now()); err != nil {
		d.App.Logger.Warn("the call was not recorded in qkit sessions", "tool", qAgentName, "err", err)
	}
}
