package acpclient

import (
	"context"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// SessionChoices are what an agent said a session can be set to, from its answer to session/new
// or session/load: its config options (the schema's way to choose a model), its models and its
// modes (ACP's older fields; kiro's modes are its agents).
type SessionChoices struct {
	ConfigOptions []acp.SessionConfigOption
	Models        *acp.SessionModelState
	Modes         *acp.SessionModeState
}

// NewChoices are the choices session/new offered.
func NewChoices(r acp.NewSessionResponse) SessionChoices {
	return SessionChoices{ConfigOptions: r.ConfigOptions, Models: r.Models, Modes: r.Modes}
}

// LoadChoices are the choices session/load offered.
func LoadChoices(r acp.LoadSessionResponse) SessionChoices {
	return SessionChoices{ConfigOptions: r.ConfigOptions, Models: r.Models, Modes: r.Modes}
}

// modelOption is the id of the session's config option of category model, or "".
func (s SessionChoices) modelOption() acp.SessionConfigId {
	for _, o := range s.ConfigOptions {
		if o.Select != nil && o.Select.Category != nil && *o.Select.Category == acp.SessionConfigOptionCategoryModel {
			return o.Select.Id
		}
	}
	return ""
}

// SetModel asks the agent to use model in session sessionID: through the session's config option
// of category model when it offered one, else with session/set_model (which kiro-cli takes). An
// error is the agent's refusal, or a session that offers no model choice at all.
func (c *Conn) SetModel(ctx context.Context, sessionID, model string, choices SessionChoices) error {
	if id := choices.modelOption(); id != "" {
		_, err := call(c, ctx, func(ctx context.Context) (acp.SetSessionConfigOptionResponse, error) {
			return c.csc.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
				SessionId: acp.SessionId(sessionID), ConfigId: id, Value: acp.SessionConfigValueId(model)}})
		})
		if err != nil {
			return configRefused(model, id, err)
		}
		return nil
	}
	_, err := call(c, ctx, func(ctx context.Context) (acp.UnstableSetSessionModelResponse, error) {
		return c.csc.UnstableSetSessionModel(ctx, acp.UnstableSetSessionModelRequest{SessionId: acp.SessionId(sessionID), ModelId: acp.UnstableModelId(model)})
	})
	if err != nil {
		if choices.Models == nil {
			return fmt.Errorf("the agent did not take model %q: it offers no model choice (session/set_model: %w)", model, err)
		}
		return fmt.Errorf("the agent did not take model %q (session/set_model): %w", model, err)
	}
	return nil
}

// SetMode asks the agent to switch session sessionID to mode (session/set_mode; kiro's modes are
// its agents). An error is the agent's refusal; it names the modes the agent offered.
func (c *Conn) SetMode(ctx context.Context, sessionID, mode string, choices SessionChoices) error {
	_, err := call(c, ctx, func(ctx context.Context) (acp.SetSessionModeResponse, error) {
		return c.csc.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: acp.SessionId(sessionID), ModeId: acp.SessionModeId(mode)})
	})
	if err == nil {
		return nil
	}
	return modeRefused(mode, choices.Modes, err)
}

// configRefused is the error of an agent that refused model for its config option id. The id is
// the agent's, so it is made visible before it can reach a terminal (model is quoted: %q escapes).
func configRefused(model string, id acp.SessionConfigId, err error) error {
	return fmt.Errorf("the agent did not take model %q (session/set_config_option %s): %w", model, termtext.VisibleLine(string(id)), err)
}

// modeRefused is the error of an agent that refused mode, naming the modes it offered (from
// session/new or session/load). The ids are the agent's, so each is made visible before it can
// reach a terminal (mode is quoted: %q escapes).
func modeRefused(mode string, modes *acp.SessionModeState, err error) error {
	if modes == nil || len(modes.AvailableModes) == 0 {
		return fmt.Errorf("the agent did not switch to mode %q (session/set_mode; it offers no modes): %w", mode, err)
	}
	ids := make([]string, 0, len(modes.AvailableModes))
	for _, m := range modes.AvailableModes {
		ids = append(ids, termtext.VisibleLine(string(m.Id)))
	}
	return fmt.Errorf("the agent did not switch to mode %q (session/set_mode; its modes are %v): %w", mode, ids, err)
}

// agent is the description of the agent the connection runs.
func (c *Conn) agent() agent.Description {
	if c.o.Agent.Program != "" {
		return c.o.Agent
	}
	return agent.Describe(c.o.Command)
}

// notACP is the error of an agent that did not answer initialize as an ACP agent.
func (c *Conn) notACP(err error) *NotACPError {
	d := c.agent()
	what := d.Name()
	if d.Builtin() {
		what += " acp"
	}
	return &NotACPError{Command: what, Err: err, Chat: d.HasChat()}
}
