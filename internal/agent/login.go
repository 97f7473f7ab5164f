package agent

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"
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
	var s stripper
	out = strings.TrimSpace(string(s.Strip(nil, []byte(out))))
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

// whoamiTimeout bounds the login check: whoami reads local files and answers at once.
const whoamiTimeout = 10 * time.Second

// CheckLogin says whether the agent CLI command can run prompts, for front ends that check
// before running one (ACP's initialize). KIRO_API_KEY (kiro-cli's headless credential) and
// AMAZON_Q_SIGV4 (q with SigV4 credentials, while whoami says logged out) count as logged in
// without asking the agent. Otherwise it runs `<command> whoami`: a missing command is a
// *MissingCommandError (never "log in"), a logged-out agent a *LoginError that says how to log in.
// env looks variables up; nil means os.LookupEnv.
func CheckLogin(ctx context.Context, command string, env func(string) (string, bool)) (Login, error) {
	if env == nil {
		env = os.LookupEnv
	}
	if v, _ := env("KIRO_API_KEY"); strings.TrimSpace(v) != "" {
		return Login{LoggedIn: true, Method: "API key"}, nil
	}
	if v, _ := env("AMAZON_Q_SIGV4"); v != "" && v != "0" && !strings.EqualFold(v, "false") {
		return Login{LoggedIn: true, Method: "SigV4"}, nil
	}
	out, errOut, code, err := query(ctx, command, "whoami", whoamiTimeout, "whoami")
	if err != nil {
		return Login{}, err
	}
	login := ParseWhoami(out, code)
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
