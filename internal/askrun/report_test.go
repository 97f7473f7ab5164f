package askrun_test

import (
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/output"
)

// TestReport: the result object carries Outcome's exit code and error, the agent's reply and
// stop reason, and what was refused; a timeout is not an error object, an untouched usage is left out.
func TestReport(t *testing.T) {
	refused := &acpclient.Refusals{}
	refused.Add(&acpclient.OutsideError{Op: "read", Path: "/w/secret.txt", Root: "/w/work"})
	res, err := askrun.Report(askrun.Run{
		Backend: acpclient.BackendACP, Agent: agent.Result{Output: "the answer\n", ExitCode: 0},
		Refused: refused, Denied: []string{"shell"}, SessionID: "s1", StopReason: "end_turn",
		Usage: agent.Usage{Credits: 0.5}, Started: time.Now(),
	})
	if output.Code(err) != output.ExitFailure || !res.IsError || res.Error != err.Error() || res.ExitCode != output.ExitFailure {
		t.Fatalf("refused path: %v, result %+v", err, res)
	}
	if res.Output != "the answer\n" || res.SessionID != "s1" || res.StopReason != "end_turn" || res.Usage == nil || res.Usage.Credits != 0.5 ||
		len(res.RefusedPaths) != 1 || res.RefusedPaths[0] != "/w/secret.txt" || len(res.Denied) != 1 {
		t.Fatalf("result %+v", res)
	}

	res, err = askrun.Report(askrun.Run{Backend: acpclient.BackendChat, Agent: agent.Result{TimedOut: true, ExitCode: -1},
		Timeout: 2 * time.Second, StopReason: "end_turn", Started: time.Now()})
	if output.Code(err) != output.ExitTimeout || res.IsError || res.ExitCode != output.ExitTimeout || !res.TimedOut ||
		res.AgentExitCode != -1 || res.Usage != nil || res.RefusedPaths != nil {
		t.Fatalf("timeout: %v, result %+v", err, res)
	}
}
