package agent

import (
	"regexp"
	"strings"
	"sync"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// StderrReport is what the agent's stderr says about a run. The agent writes plenty there on
// success (welcome text, tips, "🤖 You are chatting with ...", MCP load lines, kiro's
// "▸ Credits: ..." trailer), so only lines that match a known failure count.
type StderrReport struct {
	// ApprovalRequired: q's "Tool approval required but --no-interactive was specified".
	ApprovalRequired bool
	// TroubleResponding: q's "having trouble responding" stream failure, which q 1.19.7 may
	// follow with a false approval error.
	TroubleResponding bool
	// NotLoggedIn: "You are not logged in, please log in with q login".
	NotLoggedIn bool
	// AuthFailed: the login expired or the API key was refused ("Authentication Error",
	// "Authentication failed.").
	AuthFailed bool
	// DeviceLogin: kiro-cli started its device-login flow, which waits for a browser forever.
	DeviceLogin bool
	// UnknownAgent is the agent q fell back from ("no agent with name X found").
	UnknownAgent string
	// Errors are the lines that report a failure, in order (ANSI-stripped, trimmed).
	Errors []string
}

// The patterns are compiled on first use, not at start-up: every qkit command links this package.
var (
	unknownAgentRe = lazyRegexp(`(?i)no agent with name (\S+?)['"]? (?:found|exists)`)
	// errorLineRe matches the lines the agents print for a failure.
	errorLineRe   = lazyRegexp(`(?i)^(?:error\b|authentication (?:error|failed)|.*having trouble responding|.*(?:throttl|too many requests|service unavailable|internal server error|service is currently overloaded|quota exceeded|request failed|stream (?:error|failed|timed out)))`)
	deviceLoginRe = lazyRegexp(`(?i)user_code=|device (?:code|authori[sz]ation)|enter the code|open (?:this|the following) url`)
)

// ClassifyStderr reads the agent's stderr (ANSI escapes allowed) for the failures it reports.
func ClassifyStderr(stderr string) StderrReport {
	var r StderrReport
	clean := termtext.StripString(stderr)
	for line := range strings.Lines(clean) {
		line = strings.TrimSpace(strings.TrimLeft(line, "\r"))
		if line == "" {
			continue
		}
		lower := strings.ToLower(line)
		isErr := false
		switch {
		case strings.Contains(line, "Tool approval required but --no-interactive was specified"):
			r.ApprovalRequired, isErr = true, true
		case strings.Contains(lower, "not logged in") && strings.Contains(lower, "log in with"):
			r.NotLoggedIn, isErr = true, true
		case strings.HasPrefix(lower, "authentication error") || strings.HasPrefix(lower, "authentication failed"):
			r.AuthFailed, isErr = true, true
		case deviceLoginRe().MatchString(line):
			r.DeviceLogin = true
		}
		if strings.Contains(lower, "having trouble responding") {
			r.TroubleResponding = true
		}
		if m := unknownAgentRe().FindStringSubmatch(line); m != nil {
			r.UnknownAgent = strings.Trim(m[1], `'"`)
			isErr = true
		}
		if isErr || errorLineRe().MatchString(line) {
			r.Errors = append(r.Errors, line)
		}
	}
	return r
}

// Failed reports whether stderr says the run failed, whatever the exit status.
func (r StderrReport) Failed() bool {
	return len(r.Errors) > 0 || r.DeviceLogin
}

// Summary is the failure lines, one per line, for a message (made Printable).
func (r StderrReport) Summary() string { return Printable(strings.Join(r.Errors, "\n")) }

// lazyRegexp compiles expr once, when it is first needed.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
