package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/config"
)

// probeGrace is how long an ACP agent has to exit once the probe closes its stdin.
const probeGrace = 100 * time.Millisecond

// maxModelsShown is how many model ids the models check names.
const maxModelsShown = 6

// acpProbe is what `<agent> acp` answered, when it was asked.
type acpProbe struct {
	asked bool
	desc  acpclient.Description
	err   error
}

// checkAgent runs the agent's checks: the command found on PATH first, then, at the same time,
// its version, its login, its ACP initialize (unless agent.backend is chat) and its models. The
// agent is read as a run reads it (agent.Describe): q or kiro-cli, or an ACP agent given as its
// command line (`goose acp`), whose program is what is looked for and which has no --version,
// whoami or model list of qkit's knowing.
func checkAgent(ctx context.Context, o Options, timeout time.Duration) []Check {
	cfg := o.Config
	cv := config.AgentCommand.Value(cfg)
	command := config.AgentCommand.Get(cfg)
	d := agent.Describe(command)
	path, err := exec.LookPath(d.Program)
	if err != nil {
		what := fmt.Sprintf("%s %q (%s) not found", config.AgentCommand.Name, command, source(cv))
		advice := "install Kiro CLI (kiro-cli) or the Amazon Q Developer CLI (q), or set the path to it"
		fix := agentFix(cv)
		if !d.Builtin() {
			// Another agent was chosen on purpose: kiro-cli is no fix for it.
			what = fmt.Sprintf("%s %q (%s): its program %q not found", config.AgentCommand.Name, command, source(cv), d.Program)
			advice, fix = "install it, or set "+config.AgentCommand.Name+" to the agent's command line in ACP mode", ""
		}
		out := []Check{{Name: CheckAgent, Status: Fail, Detail: fmt.Sprintf("%s: %v; %s", what, unwrapExec(err), advice), Fix: fix}}
		for _, name := range []string{CheckVersion, CheckLogin, CheckBackend, CheckACP, CheckModels} {
			out = append(out, Check{Name: name, Status: Warn, Detail: "not checked: the agent command was not found", Fix: fix})
		}
		return out
	}
	origin := config.AgentCommand.Name + " " + source(cv)
	if cv.Source == config.SourceDefault {
		origin = config.AgentCommand.Name + "'s default"
	}
	found := fmt.Sprintf("%s found at %s (%s)", command, path, origin)
	if !d.Builtin() {
		found = fmt.Sprintf("%s, an ACP agent's command line: %s found at %s (%s)", command, filepath.Base(d.Program), path, origin)
	}
	checks := map[string]Check{CheckAgent: {Name: CheckAgent, Status: OK, Detail: found}}
	setting := config.AgentBackend.Get(cfg)
	var mu sync.Mutex
	put := func(c Check) {
		mu.Lock()
		checks[c.Name] = c
		mu.Unlock()
	}
	var probe acpProbe
	var wg sync.WaitGroup
	if d.Builtin() {
		wg.Go(func() { put(checkVersion(ctx, command, timeout)) })
		wg.Go(func() { put(checkLogin(ctx, command, timeout)) })
	} else {
		put(Check{Name: CheckVersion, Status: OK, Detail: "not asked: an ACP agent says its name and version in initialize (see acp)"})
		put(Check{Name: CheckLogin, Status: OK, Detail: "not asked: an ACP agent checks its own login, and says so when a session is opened"})
	}
	wg.Go(func() { put(checkModels(ctx, o, command, timeout)) })
	if setting != acpclient.BackendChat {
		wg.Go(func() {
			probe.asked = true
			probe.desc, probe.err = acpclient.Describe(ctx, command, o.Version, probeGrace)
		})
	}
	wg.Wait()
	backend, acpCheck := judgeBackend(o, setting, command, probe, timeout)
	checks[CheckBackend], checks[CheckACP] = backend, acpCheck
	out := make([]Check, 0, 6)
	for _, name := range []string{CheckAgent, CheckVersion, CheckLogin, CheckBackend, CheckACP, CheckModels} {
		out = append(out, checks[name])
	}
	return out
}

// acpName is what the details call the agent in ACP mode: `<program> acp` for q and kiro-cli,
// the command line for another ACP agent.
func acpName(d agent.Description) string {
	if d.Builtin() {
		return d.Name() + " acp"
	}
	return d.Name()
}

// source says where a setting's value came from, for a detail: "default", "from config.yaml",
// "from QKIT_AGENT_COMMAND", "from --set".
func source(v config.Value) string {
	if v.Source == config.SourceDefault {
		return "the default"
	}
	return "from " + v.Origin
}

// agentFix is the command that points agent.command at an agent that is installed: kiro-cli or q
// when one of them is on PATH (and is not the one that was not found), else the path to give.
func agentFix(v config.Value) string {
	for _, alt := range []string{agent.FlavourKiro, agent.FlavourQ} {
		if alt == v.Raw {
			continue
		}
		if _, err := exec.LookPath(alt); err == nil {
			return settingFix(v, alt)
		}
	}
	return settingFix(v, "/path/to/kiro-cli")
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// late is the detail of a probe that ctx ended.
func late(what string, timeout time.Duration) string {
	return fmt.Sprintf("%s did not answer within %s", what, timeout)
}

// checkVersion: `<agent> --version`, and the flavour it tells.
func checkVersion(ctx context.Context, command string, timeout time.Duration) Check {
	c := Check{Name: CheckVersion, Status: OK}
	v, err := agent.ReadVersion(ctx, command)
	name := filepath.Base(command)
	switch {
	case err != nil && ctx.Err() != nil:
		c.Status, c.Detail, c.Fix = Warn, late(name+" --version", timeout), shellJoin(command, "--version")
		return c
	case err != nil:
		c.Status, c.Detail, c.Fix = Warn, "could not read its version: "+err.Error()+"; is it the agent CLI?", "qkit settings set "+config.AgentCommand.Name+" "+agent.FlavourKiro
		return c
	}
	switch v.Flavour {
	case agent.FlavourKiro:
		c.Detail = v.Text + ": Kiro CLI (chat, acp and its model list)"
	case agent.FlavourQ:
		c.Detail = v.Text + ": the Amazon Q Developer CLI " + v.Major() + ".x (chat only: no acp, no model list)"
		if name != agent.FlavourKiro {
			if _, err := exec.LookPath(agent.FlavourKiro); err == nil {
				// q is in maintenance; kiro-cli replaces it and is already installed.
				c.Status, c.Fix = Warn, "qkit settings set "+config.AgentCommand.Name+" "+agent.FlavourKiro
				c.Detail += "; kiro-cli, its successor, is installed too"
			}
		}
	default:
		c.Detail = v.Text + ": neither q nor kiro-cli; qkit drives it as any agent CLI"
	}
	return c
}

// checkLogin: whoami (or a headless credential in the environment).
func checkLogin(ctx context.Context, command string, timeout time.Duration) Check {
	c := Check{Name: CheckLogin, Status: OK}
	login, err := agent.CheckLogin(ctx, command, nil)
	var le *agent.LoginError
	switch {
	case errors.As(err, &le):
		c.Status, c.Detail, c.Fix = Fail, "not logged in ("+le.Detail+"); "+agent.LoginHint(command), shellJoin(command, "login")
	case err != nil && ctx.Err() != nil:
		c.Status, c.Detail, c.Fix = Warn, late(filepath.Base(command)+" whoami", timeout), shellJoin(command, "login")
	case err != nil:
		c.Status, c.Detail, c.Fix = Warn, "could not tell: "+err.Error(), shellJoin(command, "login")
	default:
		c.Detail = "logged in with " + login.Method
		if login.Detail != "" {
			c.Detail += " (" + login.Detail + ")"
		}
		switch login.Method {
		case "API key":
			c.Detail += " from KIRO_API_KEY"
		case "SigV4":
			c.Detail += " credentials (AMAZON_Q_SIGV4)"
		}
	}
	return c
}

// refreshFix re-learns the backend with the next run.
const refreshFix = "qkit ask --refresh-backend --no-context hello"

// judgeBackend says which backend runs use and why (agent.backend; with auto, what was learned
// about this binary, checked against the probe), and what the probe found.
func judgeBackend(o Options, setting, command string, p acpProbe, timeout time.Duration) (backend, acpCheck Check) {
	d := agent.Describe(command)
	name, acpMode := d.Name(), acpName(d)
	backend = Check{Name: CheckBackend, Status: OK}
	acpCheck = Check{Name: CheckACP, Status: OK}
	bv := config.AgentBackend.Value(o.Config)
	var le *agent.LoginError
	speaks := p.asked && (p.err == nil || errors.As(p.err, &le))
	timedOut := p.asked && p.err != nil && errors.Is(p.err, context.DeadlineExceeded)
	switch {
	case !p.asked:
		acpCheck.Detail = "not asked: " + config.AgentBackend.Name + " is chat"
	case p.err == nil:
		caps := strings.Join(p.desc.Capabilities, ", ")
		if caps == "" {
			caps = "no optional capabilities"
		}
		who := p.desc.Agent
		if who == "" {
			who = acpMode
		}
		acpCheck.Detail = fmt.Sprintf("%s answers initialize (protocol %d): %s", who, p.desc.Protocol, caps)
	case errors.As(p.err, &le):
		acpCheck.Status, acpCheck.Detail = Warn, acpMode+" answers initialize, but is not logged in: "+le.Detail
		if d.Builtin() {
			acpCheck.Fix = shellJoin(command, "login")
		}
	case timedOut:
		acpCheck.Status, acpCheck.Detail = Warn, late(acpMode, timeout)
		if d.HasChat() {
			acpCheck.Fix = settingFix(bv, acpclient.BackendChat)
		}
	default:
		acpCheck.Detail = p.err.Error()
		var na *acpclient.NotACPError
		if !errors.As(p.err, &na) {
			acpCheck.Detail = acpMode + ": " + acpCheck.Detail
		}
		if !d.HasChat() {
			// Nothing to fall back to: every run fails the same way.
			acpCheck.Status = Fail
		} else if setting == acpclient.BackendACP {
			acpCheck.Status, acpCheck.Fix = Fail, settingFix(bv, acpclient.BackendAuto)
		}
	}

	switch {
	case !d.HasChat() && setting == acpclient.BackendChat:
		backend.Status, backend.Fix = Fail, settingFix(bv, acpclient.BackendAuto)
		backend.Detail = (&agent.NoChatError{Agent: d}).Error()
		return backend, acpCheck
	case !d.HasChat():
		backend.Detail = "acp (" + config.AgentBackend.Name + "=" + cmp.Or(setting, acpclient.BackendAuto) + ": " + config.AgentCommand.Name + " is an ACP agent's command line): " + acpMode
		return backend, acpCheck
	case setting == acpclient.BackendChat:
		backend.Detail = "chat (" + config.AgentBackend.Name + "=chat, " + source(bv) + "): " + name + " chat --no-interactive"
		return backend, acpCheck
	case setting == acpclient.BackendACP:
		backend.Detail = "acp (" + config.AgentBackend.Name + "=acp, " + source(bv) + "): " + acpMode
		if p.asked && !speaks && !timedOut {
			backend.Status, backend.Fix = Fail, settingFix(bv, acpclient.BackendAuto)
			backend.Detail += ", which does not answer initialize; auto would fall back to chat"
		}
		return backend, acpCheck
	}
	cache := acpclient.BackendCacheFile(o.Config.Paths.State)
	learned, at, ok := acpclient.LearnedBackend(cache, command)
	probed := acpclient.BackendChat
	if speaks {
		probed = acpclient.BackendACP
	}
	switch {
	case !ok && timedOut:
		backend.Detail = "auto: not learned yet; the first run probes " + name + " acp"
	case !ok:
		backend.Detail = fmt.Sprintf("%s (auto: not learned yet; the first run probes %s acp and will find %s)", probed, name, probed)
	case timedOut || learned.Backend == probed:
		backend.Detail = fmt.Sprintf("%s (auto: learned about this %s on %s)", learned.Backend, name, at.Local().Format(time.DateTime))
	default:
		// Learned acp, and it no longer speaks it: every run fails. Learned chat, and it speaks
		// ACP now: runs work, on the text path.
		backend.Status, backend.Fix = Fail, refreshFix
		if learned.Backend == acpclient.BackendChat {
			backend.Status = Warn
		}
		backend.Detail = fmt.Sprintf("%s (auto: learned about this %s on %s), but %s acp now says %s fits: runs use %s until it is probed again",
			learned.Backend, name, at.Local().Format(time.DateTime), name, probed, learned.Backend)
	}
	return backend, acpCheck
}

// checkModels: the models --model takes (agent.models, else the agent's own list), and whether
// agent.model is one of them.
func checkModels(ctx context.Context, o Options, command string, timeout time.Duration) Check {
	c := Check{Name: CheckModels, Status: OK}
	cfg := o.Config
	var list agent.ModelList
	from := ""
	if ids := config.AgentModels.Get(cfg); len(ids) > 0 {
		for _, id := range ids {
			list.Models = append(list.Models, agent.Model{ID: id})
		}
		from = "from " + config.AgentModels.Name
	} else {
		l, err := agent.ListModels(ctx, command)
		d := agent.Describe(command)
		name := d.Name()
		switch {
		case errors.Is(err, agent.ErrCannotListModels) && !d.Builtin():
			c.Detail = name + " offers its models in each session: any --model name is passed on to it"
			return c
		case errors.Is(err, agent.ErrCannotListModels):
			c.Detail = name + " cannot list its models (no chat --list-models): any --model name is passed on"
			return c
		case err != nil && ctx.Err() != nil:
			c.Status, c.Detail, c.Fix = Warn, late(name+" chat --list-models", timeout), "qkit ask --list-models"
			return c
		case err != nil:
			c.Status, c.Detail, c.Fix = Warn, "could not list them: "+err.Error(), "qkit ask --list-models"
			return c
		}
		list, from = l, "from "+name
	}
	ids := list.IDs()
	shown := strings.Join(ids[:min(len(ids), maxModelsShown)], ", ")
	if len(ids) > maxModelsShown {
		shown += ", …"
	}
	c.Detail = fmt.Sprintf("%s %s: %s", plural(len(ids), "model"), from, shown)
	if list.Default != "" {
		c.Detail += " (default " + list.Default + ")"
	}
	model := config.AgentModel.Get(cfg)
	if model == "" {
		return c
	}
	if _, ok := list.Find(model); !ok {
		suggest := list.Default
		if suggest == "" {
			suggest = ids[0]
		}
		c.Status, c.Fix = Fail, settingFix(config.AgentModel.Value(cfg), suggest)
		c.Detail = fmt.Sprintf("%s %q is not one of the %s %s: %s", config.AgentModel.Name, model, plural(len(ids), "model"), from, strings.Join(ids, ", "))
		return c
	}
	c.Detail += "; " + config.AgentModel.Name + " " + model + " is one of them"
	return c
}
