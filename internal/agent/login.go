package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// Login is who the agent CLI says is logged in.
type Login struct {
	// LoggedIn is set when the agent can run prompts.
	LoggedIn bool
	// Method says how: "Builder ID", "IAM Identity Center", "API key" (KIRO_API_KEY), "SigV4"
	// (AMAZON_Q_SIGV4), or what the agent printed when qkit does not know the wording.
	Method string
	// Detail is the rest of what whoami said (the Identity Center start URL), if anything.
	Detail string
}

// ParseWhoami reads `<agent> whoami` as the real CLIs print it: on stdout, "Not
// logged in" with exit 1; "Logged in with Builder ID", "Logged in with IAM Identity Center (URL)"
// or kiro's "Authenticated with API key" with exit 0. `--format json` output (an object with
// accountType, or null) is read too. Anything else counts as logged in only with exit 0.
func ParseWhoami(stdout string, exitCode int) Login {
	out := strings.TrimSpace(stdout)
	out = strings.TrimSpace(termtext.StripString(out))
	if strings.HasPrefix(out, "{") || out == "null" {
		var v struct {
			AccountType string `json:"accountType"`
			StartURL    string `json:"startUrl"`
		}
		if json.Unmarshal([]byte(out), &v) == nil {
			if v.AccountType == "" {
				return Login{}
			}
			return Login{LoggedIn: exitCode == 0, Method: v.AccountType, Detail: v.StartURL}
		}
	}
	first, rest, _ := strings.Cut(out, "\n")
	first = strings.TrimSpace(first)
	lower := strings.ToLower(first)
	switch {
	case exitCode != 0 || strings.HasPrefix(lower, "not logged in") || first == "":
		return Login{}
	case strings.HasPrefix(first, "Logged in with "):
		method := strings.TrimPrefix(first, "Logged in with ")
		detail := ""
		if i := strings.Index(method, " ("); i >= 0 && strings.HasSuffix(method, ")") {
			method, detail = method[:i], method[i+2:len(method)-1]
		}
		return Login{LoggedIn: true, Method: method, Detail: detail}
	case strings.HasPrefix(lower, "authenticated with api key"):
		return Login{LoggedIn: true, Method: "API key"}
	}
	return Login{LoggedIn: true, Method: first, Detail: strings.TrimSpace(rest)}
}

// HeadlessLogin is the credential in the environment that lets the agent run without a stored
// login: KIRO_API_KEY (kiro-cli's, for CI) or AMAZON_Q_SIGV4 (q with SigV4 credentials, while
// whoami says logged out). ok is false when neither is set. env looks variables up; nil means
// os.LookupEnv.
func HeadlessLogin(env func(string) (string, bool)) (login Login, ok bool) {
	if env == nil {
		env = os.LookupEnv
	}
	if v, _ := env("KIRO_API_KEY"); strings.TrimSpace(v) != "" {
		return Login{LoggedIn: true, Method: "API key"}, true
	}
	if v, _ := env("AMAZON_Q_SIGV4"); v != "" && v != "0" && !strings.EqualFold(v, "false") {
		return Login{LoggedIn: true, Method: "SigV4"}, true
	}
	return Login{}, false
}

// EnvLookup looks variables up in env ("KEY=VALUE", the last one of a key wins), or in the
// process's environment when env is nil: the environment an agent started with env sees.
func EnvLookup(env []string) func(string) (string, bool) {
	if env == nil {
		return os.LookupEnv
	}
	return func(key string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
}

// NotChecked is Login.Method for an agent qkit does not check (it has no whoami).
const NotChecked = "not checked (the agent checks its own login)"

// whoamiTimeout bounds the login check: whoami reads local files and answers at once.
const whoamiTimeout = 10 * time.Second

// CheckLogin says whether the agent CLI command can run prompts, for front ends that check
// before running one (ACP's initialize). An agent without a whoami (Description.WhoamiArgs: an
// ACP agent given as a command line) counts as logged in (NotChecked). A HeadlessLogin counts as logged in without asking the
// agent. Otherwise it runs `<command> whoami`: a missing command is a
// *MissingCommandError (never "log in"), a logged-out agent a *LoginError that says how to log in.
// env is the agent's environment ("KEY=VALUE"; nil: qkit's own): the credential variables are
// read from it and whoami runs with it, as the agent it speaks for would.
func CheckLogin(ctx context.Context, command string, env []string) (Login, error) {
	d := Describe(command)
	if d.WhoamiArgs() == nil {
		// An ACP agent checks its own login: it lists its methods in initialize and answers a
		// session it cannot open without one with auth_required.
		return Login{LoggedIn: true, Method: NotChecked}, nil
	}
	if login, ok := HeadlessLogin(EnvLookup(env)); ok {
		return login, nil
	}
	out, errOut, exit, err := queryIn(ctx, env, d.Program, "whoami", whoamiTimeout, d.WhoamiArgs()...)
	if err != nil {
		return Login{}, err
	}
	login := ParseWhoami(out, exit.Code)
	if !login.LoggedIn {
		detail := strings.TrimSpace(out)
		if detail == "" {
			detail = strings.TrimSpace(errOut)
		}
		first, _, _ := strings.Cut(detail, "\n")
		return login, &LoginError{Command: command, Detail: commandName(command) + " whoami: " + strings.TrimSpace(first)}
	}
	return login, nil
}

// LoginProbe asks whoami, once, whether an agent that has said nothing for a while waits for a
// login nobody can give (kiro-cli without a credential blocks forever on its device login, on
// `chat` and on `acp` alike). It costs nothing to a run whose agent speaks in time, and one whoami
// to one that is merely slow.
type LoginProbe struct {
	timer *time.Timer
	found atomic.Pointer[LoginError]
}

// StartLoginProbe arms the probe for a run under l: once l.LoginProbeAfter has passed (see
// Limits.LoginProbeAfter; a negative one disarms it), unless spoke reports that the agent has said
// something by then, CheckLogin is asked (env is the agent's environment, as for CheckLogin). A
// logged-out answer, while the agent is still silent, calls stop, which ends the run; Found then
// has the error to return. ctx bounds the whoami.
func StartLoginProbe(ctx context.Context, l Limits, env []string, spoke func() bool, stop func()) *LoginProbe {
	p := &LoginProbe{}
	if l.LoginProbeAfter < 0 {
		return p
	}
	p.timer = time.AfterFunc(after(l), func() {
		if spoke() || ctx.Err() != nil {
			return
		}
		var le *LoginError
		if _, err := CheckLogin(ctx, l.Command, env); errors.As(err, &le) && !spoke() {
			_, said, _ := strings.Cut(le.Detail, ": ")
			p.found.Store(&LoginError{Command: l.Command, Detail: fmt.Sprintf("it printed nothing for %s and %s whoami says %q; qkit stopped it",
				after(l), commandName(l.Command), said)})
			stop()
		}
	})
	return p
}

// Stop disarms the probe (a whoami already running goes on, and may still call stop).
func (p *LoginProbe) Stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// Found is the *LoginError the probe stopped the run with, or nil.
func (p *LoginProbe) Found() *LoginError { return p.found.Load() }
