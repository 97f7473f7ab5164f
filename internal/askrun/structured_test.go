package askrun

import (
	"testing"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/output"
)

// TestCreditBudgetNeedsAnAgentThatReportsCredits: --max-credits is kept only where credits are
// reported (kiro-cli, or q running it, on acp); elsewhere it is refused before the run, never
// taken and left unenforced (an ACP agent given as a command line ran with no limit).
func TestCreditBudgetNeedsAnAgentThatReportsCredits(t *testing.T) {
	for _, tc := range []struct {
		command, backend string
		ok               bool
	}{
		{"kiro-cli", acpclient.BackendACP, true},
		{"q", acpclient.BackendACP, true},
		{"kiro-cli", acpclient.BackendChat, false},
		{"goose acp", acpclient.BackendACP, false},
		{"env NAME=1 my-agent --acp", acpclient.BackendACP, false},
	} {
		o := Options{Limits: agent.Limits{Command: tc.command}, Structured: &Structured{MaxCredits: 1}}
		err := o.checkBudgetBackend(tc.backend)
		if tc.ok != (err == nil) {
			t.Errorf("%s on %s: %v, want ok %v", tc.command, tc.backend, err, tc.ok)
		}
		if err != nil && output.Code(err) != output.ExitUsage {
			t.Errorf("%s on %s: exit %d, want %d", tc.command, tc.backend, output.Code(err), output.ExitUsage)
		}
		o.Structured.MaxCredits = 0
		if err := o.checkBudgetBackend(tc.backend); err != nil {
			t.Errorf("%s on %s without a budget: %v", tc.command, tc.backend, err)
		}
	}
}
