package askrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// Options are one run of the agent as a front end asks for it: `qkit ask`, the q-developer-agent
// MCP tool and acp serve's text path each fill them with their own policy and output.
type Options struct {
	// Limits are agent.* (command, timeout, size cap, default model, grace, logger).
	Limits agent.Limits
	// Request is the prompt (with the context files already in front of it) and the agent's flags.
	// Its TrustAll and TrustTools are taken from Policy. Dir is the working directory: the agent
	// runs there and its file and terminal requests are served inside it (empty: qkit's own).
	Request agent.Request
	// Backend is agent.backend (or --backend): auto, acp or chat; empty is auto.
	Backend string
	// RefreshBackend probes the agent again under auto instead of using what was learned.
	RefreshBackend bool
	// StateDir holds what is learned about the agent's backend and each folder's last ACP session.
	StateDir string
	// SessionID is an ACP session to load instead of opening one (Request.Resume loads the folder's last).
	SessionID string
	// ResumeName is how the front end calls Request.Resume in its messages: "--resume" (the
	// default) for ask, "resume" for the MCP tool.
	ResumeName string
	// Policy decides what the agent may do on either backend: the tools it trusts or refuses, what
	// happens to a tool nothing covers (OnPermission), and the files and commands it reaches
	// without asking. nil: what Request trusts, and fail for the rest.
	Policy *approval.Policy
	// OnACP is called on the ACP backend before the run, to complete the policy (the Asker of
	// OnPermission ask, or the default OnPermission): what a person can be asked exists there only.
	OnACP func(p *approval.Policy) error
	// CheckModel refuses a model the agent does not list before anything runs.
	CheckModel bool
	// ClientVersion is qkit's version, sent to an ACP agent.
	ClientVersion string
	// OnEvent receives the run's events as they happen, one at a time and in order.
	OnEvent func(agent.Event)
	// OnWarning is told what the caller should say to a person (nil: nothing is said).
	OnWarning func(string)
	// Structured asks for JSON valid against a schema (retried in the same session) and bounds
	// the run (structured.go); nil: the prompt is sent once, unbounded.
	Structured *Structured
	// Sessions resolves SessionID against qkit's session store and records the run's turn there
	// (sessions.go); nil: SessionID is the agent's, and nothing is recorded.
	Sessions *Sessions

	choice    acpclient.BackendChoice  // what chooseBackend took, with how it knew
	continued *sessionrec.Continuation // the stored session resolveSession found, until continueSession
}

// SessionsFile is the file in stateDir where each folder's last ACP session is remembered, for
// --resume and --session's completion.
func SessionsFile(stateDir string) string { return filepath.Join(stateDir, "acp-sessions.json") }

// Validate checks the request against the limits before anything runs; the error is a usage
// error (exit 2).
func Validate(l agent.Limits, r agent.Request) error {
	if err := agent.Validate(l, r); err != nil {
		return output.WithCode(output.ExitUsage, err)
	}
	return nil
}

// CheckModel refuses a model the agent does not list, before anything runs (exit 2). Without
// agent.models, the agent's own list (cached in stateDir) decides; an agent that cannot list
// takes any name. A list stopped by ctx is Interrupted.
func CheckModel(ctx context.Context, stateDir string, l agent.Limits, r agent.Request) error {
	m := agent.ModelOf(l, r)
	if m == "" {
		return nil // nothing to check: no need to ask the agent for its list
	}
	choices, from := agent.NewModelCache(stateDir).Choices(ctx, l)
	if ctx.Err() != nil {
		return Interrupted() // the list, with its process group, was stopped: nothing ran
	}
	if err := agent.CheckChoice(l.Command, m, choices, from); err != nil {
		return output.WithCode(output.ExitUsage, err)
	}
	return nil
}

// policy is o.Policy, or the request's trust with fail for the rest.
func (o *Options) policy() *approval.Policy {
	if o.Policy == nil {
		o.Policy = &approval.Policy{TrustAll: o.Request.TrustAll, Trust: o.Request.TrustTools, OnPermission: approval.Fail}
	}
	o.Request.TrustAll, o.Request.TrustTools = o.Policy.TrustAll, o.Policy.Trust
	return o.Policy
}

func (o *Options) warn(format string, args ...any) {
	if o.OnWarning != nil {
		o.OnWarning(fmt.Sprintf(format, args...))
	}
}

// chooseBackend resolves o.Backend; probe false takes what was learned under auto, else chat,
// and starts nothing (a dry run). A stored session goes on on either backend (continueSession); a
// session id the store does not know is the agent's own, which only the acp backend loads.
func (o *Options) chooseBackend(ctx context.Context, probe bool) (string, error) {
	setting := o.Backend
	agentSession := o.SessionID != "" && o.continued == nil
	if agentSession && setting == acpclient.BackendChat {
		return "", output.UsageErrorf("--session names no session qkit stored, so it is the agent's own ACP session: it needs the acp backend, not %s", setting)
	}
	file := acpclient.BackendCacheFile(o.StateDir)
	if !probe {
		switch {
		case setting == acpclient.BackendACP || setting == acpclient.BackendChat:
			return setting, nil
		case agentSession:
			return acpclient.BackendACP, nil
		}
		if c, _, ok := acpclient.LearnedBackend(file, o.Limits.Command); ok && !o.RefreshBackend {
			return c.Backend, nil
		}
		return acpclient.BackendChat, nil // what a run that is not probed would do
	}
	choice, err := acpclient.ChooseBackend(ctx, setting, o.Limits.Command, file, o.RefreshBackend, o.Limits.Logger)
	o.choice = choice
	if err != nil {
		if ctx.Err() != nil {
			return "", Interrupted()
		}
		return "", err
	}
	if agentSession && choice.Backend != acpclient.BackendACP {
		// Not the reason's own advice: it may say to set agent.backend chat, which cannot load it.
		return "", output.Errorf(output.ExitFailure, "--session names no session qkit stored, so it is the agent's own ACP session, "+
			"and agent.backend auto found that %s does not speak ACP; if it does now, qkit ask --refresh-backend probes it again, or set agent.backend acp",
			o.Limits.Command)
	}
	return choice.Backend, nil
}

// chatTrust keeps the policy's denials on the chat backend, which cannot be asked: the denied
// tools are not trusted (the agent then refuses them, or fails); trust-all with denials is refused.
func (o *Options) chatTrust() error {
	trust, err := approval.ChatTrust(o.Request.TrustAll, o.Request.TrustTools, o.Policy.Deny)
	if err != nil {
		return output.WithCode(output.ExitUsage, err)
	}
	o.Request.TrustTools = trust
	return nil
}

// Plan is what a dry run shows: the command line the chosen backend would run and the prompt.
type Plan struct {
	Backend string
	Argv    []string
	Prompt  string
	// PromptOnStdin: the prompt goes on the agent's stdin (chat: too long for one argument).
	PromptOnStdin bool
}

// DryRun is the run o would make, started nowhere: under auto the backend learned about the agent
// binary before (nothing learned: chat, which a run would probe first). A stored session id is
// resolved as the run would (its agent session, or its turns before the prompt on chat).
func DryRun(o Options) (Plan, error) {
	o.policy()
	if _, err := o.resolveSession(context.Background()); err != nil {
		return Plan{}, err
	}
	backend, err := o.chooseBackend(context.Background(), false)
	if err != nil {
		return Plan{}, err
	}
	if err := o.continueSession(context.Background(), backend); err != nil {
		return Plan{}, err
	}
	if s := o.Structured; s != nil && s.Schema != nil {
		o.Request.Prompt = s.Schema.Prompt(o.Request.Prompt) // the prompt as the first attempt sends it
	}
	if backend == acpclient.BackendACP {
		if len(o.Policy.Deny) > 0 {
			o.Request.TrustAll, o.Request.TrustTools = false, nil // qkit decides everything then
		}
		return Plan{Backend: backend, Argv: acpclient.Argv(o.Limits, o.Request), Prompt: o.Request.Prompt}, nil
	}
	if err := o.chatTrust(); err != nil {
		return Plan{}, err
	}
	return Plan{Backend: backend, Argv: agent.Argv(o.Limits, o.Request), Prompt: o.Request.Prompt, PromptOnStdin: agent.PromptOnStdin(o.Request)}, nil
}

// Execute is one run of the agent: it validates the request, checks the model (CheckModel),
// chooses the backend, applies the policy on it (on ACP: permission requests, and the file and
// terminal requests it serves inside Request.Dir; on chat: what is trusted), runs the prompt with
// the timeout, the size cap and ctx's cancellation, and returns what the run left (Report turns it
// into the result object and the error with its exit code). An error from Execute itself means
// nothing ran: a bad request (exit 2), an unknown ACP session (4), an interrupt (130).
func Execute(ctx context.Context, o Options) (Run, error) {
	p := o.policy()
	if err := Validate(o.Limits, o.Request); err != nil {
		return Run{}, err
	}
	if o.CheckModel {
		if err := CheckModel(ctx, o.StateDir, o.Limits, o.Request); err != nil {
			return Run{}, err
		}
	}
	stored, err := o.resolveSession(ctx)
	if err != nil {
		return Run{}, err
	}
	backend, err := o.chooseBackend(ctx, true)
	if err != nil {
		return Run{}, err
	}
	if err := o.continueSession(ctx, backend); err != nil {
		return Run{}, err
	}
	if err := o.checkBudgetBackend(backend); err != nil {
		return Run{}, err
	}
	run := Run{Backend: backend, Timeout: o.Limits.Timeout, Started: time.Now(), Trusted: p.Trust}
	m := o.newMeter()
	if backend == acpclient.BackendACP {
		err = o.runACP(ctx, p, m, &run)
		if err == nil && o.choice.Stale(run.Err) && o.SessionID == "" && !o.Request.Resume {
			// What auto learned is out of date: the agent binary no longer answers initialize (it
			// started and nothing ran; the run forgot what was learned). Probe it again and run on
			// what fits it now, instead of failing once for the user to retry.
			o.warn("%s no longer speaks ACP as learned: probing it again (agent.backend auto)", o.Limits.Command)
			o.RefreshBackend = true
			if backend, err = o.chooseBackend(ctx, true); err != nil {
				return Run{}, err
			}
			run = Run{Backend: backend, Timeout: o.Limits.Timeout, Started: time.Now(), Trusted: p.Trust}
			m = o.newMeter()
			if backend == acpclient.BackendACP {
				err = o.runACP(ctx, p, m, &run)
			} else {
				err = o.runChat(ctx, p, m, &run)
			}
		}
	} else {
		err = o.runChat(ctx, p, m, &run)
	}
	if err != nil {
		return Run{}, err
	}
	run.Interrupted = ctx.Err() != nil
	if run.Agent.TimedOut || (run.Interrupted && run.Err != nil) {
		run.Agent.ExitCode = -1 // qkit stopped it, on either backend
	}
	run.Denied = append(run.Denied, p.Denied()...)
	run.Unasked, run.UnaskedErr = p.Refused(), p.Err()
	run.StoredSession = o.recordSession(ctx, stored, run)
	return run, nil
}

func (o *Options) runChat(ctx context.Context, p *approval.Policy, m *meter, run *Run) error {
	if err := o.chatTrust(); err != nil {
		return err
	}
	if p.OnPermission == approval.Ask {
		o.warn("--on-permission ask needs the acp backend: chat --no-interactive cannot be asked, so a tool it does not trust fails the run")
	}
	l := o.Limits
	if l.Timeout > 0 {
		l.Deadline = run.Started.Add(l.Timeout) // the timeout bounds the run, retries included
	}
	o.ask(ctx, m, run, func(ctx context.Context, prompt string, attempt int) (string, error) {
		r := o.Request
		r.Prompt, r.Resume = prompt, r.Resume || attempt > 1 // a retry resumes the conversation
		run.Agent, run.Err = agent.Stream(ctx, l, r, o.OnEvent)
		run.StopReason, run.Denied = "end_turn", nil
		// kiro-cli refused what the policy asked it to refuse (--deny-tools, --on-permission deny),
		// and carried on: that is the run that was asked for, as on the ACP backend.
		if labels, ok := approval.ChatRefusals(run.Err, p.Deny, p.OnPermission); ok {
			run.Err, run.Denied = nil, labels
		}
		return run.Agent.Body(), run.Err
	})
	return nil
}

func (o *Options) runACP(ctx context.Context, p *approval.Policy, m *meter, run *Run) error {
	dir, err := o.dir()
	if err != nil {
		return err
	}
	session := o.SessionID
	if session == "" && o.Request.Resume {
		if session = acpclient.LastSession(SessionsFile(o.StateDir), dir); session == "" {
			name := cmp.Or(o.ResumeName, "--resume")
			return output.NotFoundf("%s: no ACP session was saved for %s yet: a run there without %s saves one", name, dir, name)
		}
	}
	if o.OnACP != nil {
		if err := o.OnACP(p); err != nil {
			return err
		}
	}
	if p.OnPermission == "" {
		p.OnPermission = approval.Fail
	}
	r := o.Request
	if len(p.Deny) > 0 {
		// The agent would not ask about what it trusts itself: qkit decides everything.
		r.TrustAll, r.TrustTools = false, nil
	}
	r.Dir = dir
	run.Refused = &acpclient.Refusals{}
	onRefused := func(e *acpclient.OutsideError) {
		o.warn("%v", e)
		run.Refused.Add(e)
	}
	terms := &acpclient.DirTerminals{Root: dir, Logger: o.Limits.Logger, OnRefused: onRefused}
	defer terms.Close()
	// One agent process, one connection and one session for the whole run: a retry is another
	// session/prompt on the session of the first answer; the run's timeout bounds them all.
	runner := acpclient.NewRunner(ctx, acpclient.RunOptions{
		Limits: o.Limits, Request: r, SessionID: session, ClientVersion: o.ClientVersion, OnEvent: o.OnEvent,
		Permission: p.Decide, Files: &acpclient.DirFiles{Root: dir, OnRefused: onRefused}, Terminals: terms, Access: p.Access,
	})
	o.ask(ctx, m, run, func(ctx context.Context, prompt string, attempt int) (string, error) {
		res, err := runner.Prompt(ctx, prompt)
		run.Err, run.Agent = err, res.Result
		run.SessionID, run.StopReason, run.Usage = res.SessionID, res.StopReason, m.attemptUsage(res.Usage)
		// A tool is named and trusted as on the chat backend: by the name the agent trusts it under
		// (ACP carries a title and a kind), trusted when the policy trusted it (it ran without asking).
		// The one nothing allowed (--on-permission fail) did not run, for want of trust: denied
		// and failed, as chat reports the tool kiro-cli refused because it was not trusted.
		var needs *approval.NeedsPermissionError
		errors.As(err, &needs)
		for i, t := range run.Agent.Tools {
			if needs != nil && t.ID == needs.Tool.ID {
				t.Denied = true
				if t.Status != agent.ToolCompleted {
					t.Status = agent.ToolFailed
				}
				run.Agent.Tools[i] = t
			}
			run.Agent.Tools[i] = approval.Named(t)
			run.Agent.Tools[i].Trusted = !t.Denied && p.Trusts(t)
		}
		if attempt == 1 && res.SessionID != "" && o.StateDir != "" {
			if err := acpclient.RememberSession(SessionsFile(o.StateDir), dir, res.SessionID); err != nil && o.Limits.Logger != nil {
				o.Limits.Logger.Debug("could not remember the ACP session", "error", err)
			}
		}
		return res.Body(), err
	})
	// The agent's exit and its stderr are known once it is stopped, after the last prompt.
	run.Agent.ExitCode, run.Agent.Stderr = runner.Close()
	return nil
}

func (o *Options) dir() (string, error) {
	if o.Request.Dir != "" {
		return filepath.Abs(o.Request.Dir)
	}
	d, err := filepath.Abs(".")
	if err != nil {
		return "", errors.New("the working directory: " + err.Error())
	}
	return d, nil
}
