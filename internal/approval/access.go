package approval

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
)

// Access decides a write (fs/write_text_file) or a command (terminal/create) the agent sends
// (acpclient.AccessFunc). qkit is the client and keeps its own policy, whether the agent asked
// first or not: the request is served when the flags allow its kind (--yolo; --trust-tools naming
// write/edit for a write, shell/execute for a command, or a glob its title "Write PATH" / "Run
// COMMAND" matches), or a grant covers it (Grants.CoversAccess: a permission granted in this turn
// for the tool call it belongs to, by a flag, a person or "allow always", that still runs; or a
// person's "allow always" for the tool it stands for, write or shell). That grant rule is the one
// `acp serve`'s proxy keeps for the writes it serves itself. --deny-tools refuses it whatever
// else. Anything else is refused (an *UnaskedError, whose message the agent gets) and listed
// (Refused); with --on-permission fail (the zero value) the run then fails (Err), though the
// agent may carry on without it.
func (p *Policy) Access(_ context.Context, req acpclient.Access) error {
	denied := Matches(p.Deny, req.Tool)
	if !denied && (p.TrustAll || Matches(p.Trust, req.Tool) || p.always.CoversAccess(req)) {
		return nil
	}
	e := &UnaskedError{Access: req, Trusted: p.Trust, Denied: denied, Flags: p.Flags}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = append(p.refused, req.String())
	if !denied && p.OnPermission != Deny && p.OnPermission != Ask && p.failed == nil {
		p.failed = e
	}
	return e
}

// Refused lists the writes and commands Access refused, in order ("write PATH", "run COMMAND").
func (p *Policy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refused)
}

// Err is the run's failure from Access: the first write or command refused under --on-permission
// fail (an *UnaskedError), or nil.
func (p *Policy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		return nil
	}
	return p.failed
}

// UnaskedError is a write or a command the agent sent that no permission covered: it was refused.
// Its message names the flag that would allow it (or, Denied, the --deny-tools that refused it),
// in the words of the front end's options (Flags).
type UnaskedError struct {
	Access acpclient.Access
	// Trusted is what the run trusted (--trust-tools), for the hint's whole value.
	Trusted []string
	// Denied is set when --deny-tools names it.
	Denied bool
	// Flags name the front end's options (Policy.Flags; zero: qkit ask's).
	Flags agent.TrustFlags
}

func (e *UnaskedError) Error() string {
	f := e.Flags.Or()
	if e.Denied {
		return fmt.Sprintf("refused to %s: %s refuses it", e.Access, cmp.Or(f.Deny, "the run's policy"))
	}
	return fmt.Sprintf("refused to %s: the agent did not ask permission for it (%s) and nothing allowed it; %s",
		e.Access, e.Access.Method, agent.TrustHint(e.Trusted, []string{TrustName(e.Access.Tool)}, f))
}
