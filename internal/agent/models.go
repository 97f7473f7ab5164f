package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// Model is one model the agent offers.
type Model struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// ModelList is the agent's models, as `<agent> chat --list-models --format json` prints them.
type ModelList struct {
	Models  []Model `json:"models"`
	Default string  `json:"default,omitempty"`
}

// ParseModels reads `chat --list-models --format json`: an object {models, default_model}, whose
// models are objects (model_id or id or modelId, model_name or name, description) or plain strings.
// The list is the agent's text, printed by ask --list-models and in errors: a model whose id is not
// a visible token (checkModel) is left out, and names and descriptions are made printable.
func ParseModels(data []byte) (ModelList, error) {
	var raw struct {
		Models       []json.RawMessage `json:"models"`
		Default      string            `json:"default_model"`
		DefaultCamel string            `json:"defaultModel"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(data), &raw); err != nil {
		return ModelList{}, fmt.Errorf("reading the model list: %w", err)
	}
	list := ModelList{Default: checkDefault(firstOf(raw.Default, raw.DefaultCamel))}
	for _, m := range raw.Models {
		var id string
		if json.Unmarshal(m, &id) == nil {
			if mod, ok := checkModel(Model{ID: id}); ok {
				list.Models = append(list.Models, mod)
			}
			continue
		}
		var o struct {
			ModelID     string `json:"model_id"`
			ID          string `json:"id"`
			Camel       string `json:"modelId"`
			ModelName   string `json:"model_name"`
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(m, &o); err != nil {
			return ModelList{}, fmt.Errorf("reading the model list: a model is neither a name nor an object: %s", m)
		}
		mod := Model{ID: firstOf(o.ModelID, o.ID, o.Camel, o.ModelName, o.Name), Name: firstOf(o.ModelName, o.Name), Description: o.Description}
		if mod, ok := checkModel(mod); ok {
			list.Models = append(list.Models, mod)
		}
	}
	if len(list.Models) == 0 {
		return ModelList{}, errors.New("reading the model list: it names no model")
	}
	return list, nil
}

// checkModel is m as a model list may hold it, and whether it may be listed at all: its id trimmed
// and a visible token (nothing a terminal would act on, no space), since it is printed and given
// back as --model, which such an id could never be; its name and description through Printable,
// its name left out when it is the id. ParseModels and the cache (cachedModels.valid) both go
// through it, so a list stored before cannot bring back what the parser leaves out.
func checkModel(m Model) (Model, bool) {
	m.ID = strings.TrimSpace(m.ID)
	if !visibleToken(m.ID) {
		return Model{}, false
	}
	m.Name, m.Description = Printable(m.Name), Printable(m.Description)
	if m.Name == m.ID {
		m.Name = ""
	}
	return m, true
}

// checkDefault is the agent's default model id, or "" when it is not a visible token (checkModel).
func checkDefault(id string) string {
	if id = strings.TrimSpace(id); visibleToken(id) {
		return id
	}
	return ""
}

// visibleToken reports whether s is non-empty text a terminal shows as it is, without spaces.
func visibleToken(s string) bool {
	return s != "" && termtext.VisibleLine(s) == s && !strings.ContainsFunc(s, unicode.IsSpace)
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Find returns the model name refers to: by id or name, ignoring case, as the agents match them.
func (m ModelList) Find(name string) (Model, bool) {
	for _, mod := range m.Models {
		if strings.EqualFold(mod.ID, name) || mod.Name != "" && strings.EqualFold(mod.Name, name) {
			return mod, true
		}
	}
	return Model{}, false
}

// IDs returns the models' ids, in order.
func (m ModelList) IDs() []string {
	ids := make([]string, 0, len(m.Models))
	for _, mod := range m.Models {
		ids = append(ids, mod.ID)
	}
	return ids
}

// ErrCannotListModels is the answer of an agent that has no model list (q 1.19.7 has no
// --list-models flag): any model name is then passed to it.
var ErrCannotListModels = errors.New("the agent cannot list its models")

// listTimeout bounds `chat --list-models`, which asks the service.
const listTimeout = 15 * time.Second

// ListModels asks the agent CLI command for its models (`chat --list-models --format json`), in a
// process group of its own. An agent without such a command (an ACP agent given as a command line,
// which lists its models in each session) or without the flag (it exits with a usage error, or
// prints no list) gives ErrCannotListModels; a missing binary *MissingCommandError. When ctx ends
// first, the query's whole group is stopped and the error wraps context.Cause(ctx) (errors.Is
// context.Canceled for a cancel or an interrupt): the caller's stop, not the agent's failure.
func ListModels(ctx context.Context, command string) (ModelList, error) {
	d := Describe(command)
	if d.ListModelsArgs() == nil {
		return ModelList{}, ErrCannotListModels // an ACP agent lists its models in each session
	}
	out, errOut, exit, err := query(ctx, d.Program, "chat --list-models", listTimeout, d.ListModelsArgs()...)
	switch {
	case err != nil:
		return ModelList{}, err
	case exit.Code == 2 || exit.Code != 0 && strings.Contains(errOut, "--list-models"):
		return ModelList{}, ErrCannotListModels
	case exit.Code != 0:
		return ModelList{}, fmt.Errorf("%s chat --list-models failed (%s)%s", commandName(command), exit, StderrSuffix(errOut))
	}
	list, err := ParseModels([]byte(out))
	if err != nil {
		return ModelList{}, ErrCannotListModels
	}
	return list, nil
}

// ModelCache keeps the agent's model list in a file, so completion and validation do not ask the
// agent every time. An agent that cannot list is remembered too.
type ModelCache struct {
	// File is where the list is kept (in qkit's state directory).
	File string
	// TTL is how long a list stays fresh; 0 means DefaultModelTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultModelTTL is how long a model list is kept: long enough that commands do not ask the
// agent every time, short enough that a new model shows up the same day.
const DefaultModelTTL = time.Hour

// NewModelCache returns the cache in stateDir.
func NewModelCache(stateDir string) ModelCache {
	return ModelCache{File: filepath.Join(stateDir, "agent-models.json")}
}

type cachedModels struct {
	Command string    `json:"command"`
	Fetched time.Time `json:"fetched"`
	Listed  bool      `json:"listed"`
	List    ModelList `json:"list"`
}

// valid reports whether v is what Refresh could have stored: a list ParseModels could have given
// (a model at least, each as checkModel leaves it), or none when the agent cannot list them. A
// damaged cache, or one written before a check was added, is asked again, not trusted.
func (v cachedModels) valid() bool {
	if !v.Listed {
		return len(v.List.Models) == 0 && v.List.Default == ""
	}
	if len(v.List.Models) == 0 || checkDefault(v.List.Default) != v.List.Default {
		return false
	}
	for _, m := range v.List.Models {
		if c, ok := checkModel(m); !ok || c != m {
			return false
		}
	}
	return true
}

// Models returns command's models, from the cache while fresh, else from the agent (and stores
// them). listed is false when the agent cannot list its models; err is for anything else (a missing
// binary, a failure), in which case nothing is stored.
func (c ModelCache) Models(ctx context.Context, command string) (list ModelList, listed bool, err error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultModelTTL
	}
	if c.File != "" {
		if data, err := os.ReadFile(c.File); err == nil {
			var v cachedModels
			if json.Unmarshal(data, &v) == nil && v.Command == command && now().Sub(v.Fetched) < ttl && now().Sub(v.Fetched) >= 0 && v.valid() {
				return v.List, v.Listed, nil
			}
		}
	}
	return c.Refresh(ctx, command)
}

// Refresh asks the agent for its models and stores the answer.
func (c ModelCache) Refresh(ctx context.Context, command string) (ModelList, bool, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	list, err := ListModels(ctx, command)
	listed := err == nil
	if err != nil && !errors.Is(err, ErrCannotListModels) {
		return ModelList{}, false, err
	}
	if c.File != "" {
		data, _ := json.Marshal(cachedModels{Command: command, Fetched: now(), Listed: listed, List: list})
		// A cache that cannot be written only means asking again next time.
		if os.MkdirAll(filepath.Dir(c.File), 0o700) == nil {
			if f, err := os.CreateTemp(filepath.Dir(c.File), ".agent-models-*"); err == nil {
				_, werr := f.Write(data)
				if cerr := f.Close(); werr == nil && cerr == nil {
					_ = os.Rename(f.Name(), c.File)
				}
				_ = os.Remove(f.Name())
			}
		}
	}
	return list, listed, nil
}

// Where a model list comes from (ModelCache.Choices).
const (
	ModelsFromSetting = "setting" // agent.models
	ModelsFromAgent   = "agent"   // the agent's own --list-models
	ModelsFromNone    = ""        // neither: any name is passed on
)

// Choices is what a model may be, wherever one is named (ask --model, the q-developer-agent tool's
// override-model, acp serve --model and a session's model option): the agent.models setting when
// set, else the agent's own list (cached); with neither (q 1.19.7 cannot list its models) any name
// passes. An agent that cannot be asked at all (missing, failing) counts as neither: running it
// reports that.
func (c ModelCache) Choices(ctx context.Context, l Limits) (ModelList, string) {
	if len(l.Models) > 0 {
		return settingModels(l), ModelsFromSetting
	}
	list, listed, err := c.Models(ctx, l.Command)
	if err != nil || !listed {
		return ModelList{}, ModelsFromNone
	}
	return list, ModelsFromAgent
}

// FreshChoices is Choices with the agent asked again rather than the cache read (ask
// --list-models); an agent that cannot be asked (missing, failing) is an error here.
func (c ModelCache) FreshChoices(ctx context.Context, l Limits) (ModelList, string, error) {
	if len(l.Models) > 0 {
		return settingModels(l), ModelsFromSetting, nil
	}
	list, listed, err := c.Refresh(ctx, l.Command)
	if err != nil {
		return ModelList{}, ModelsFromNone, err
	}
	if !listed {
		return ModelList{}, ModelsFromNone, nil
	}
	return list, ModelsFromAgent, nil
}

func settingModels(l Limits) ModelList {
	var list ModelList
	for _, m := range l.Models {
		list.Models = append(list.Models, Model{ID: m})
	}
	return list
}

// FallbackModels is q's offline model list: what is offered for an agent that cannot list its
// models.
var FallbackModels = []string{"claude-sonnet-4", "claude-3.7-sonnet"}

// OfferedModels are the model ids to offer (--model completion, an ACP session's model option)
// for choices from Choices: their ids, or FallbackModels when there is no list.
func OfferedModels(choices ModelList, from string) []string {
	if from == ModelsFromNone {
		return slices.Clone(FallbackModels)
	}
	return choices.IDs()
}

// CheckChoice says whether model is one of choices (from Choices, whose source is from): by id or
// name, ignoring case; any name passes when there is no list.
func CheckChoice(command, model string, choices ModelList, from string) error {
	if from == ModelsFromSetting {
		if _, ok := choices.Find(model); model != "" && !ok {
			return fmt.Errorf("unknown model %q: available models are %s (the agent.models setting lists them)", model, strings.Join(choices.IDs(), ", "))
		}
		return nil
	}
	return CheckModel(command, model, choices, from == ModelsFromAgent)
}

// CheckModel says whether the agent takes model: with a list, the model must be on it (by id or
// name, ignoring case); without one, any name passes.
func CheckModel(command, model string, list ModelList, listed bool) error {
	if model == "" || !listed {
		return nil
	}
	if _, ok := list.Find(model); ok {
		return nil
	}
	return fmt.Errorf("unknown model %q: %s's models are %s (%s chat --list-models; qkit ask --list-models)",
		model, commandName(command), strings.Join(list.IDs(), ", "), commandName(command))
}
