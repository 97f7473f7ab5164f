package askrun_test

import (
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
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
		Refused: refused, Denied: []string{"shell"}, Unasked: []string{"write /w/work/x.txt"}, SessionID: "s1", StopReason: "end_turn",
		Usage: agent.Usage{Credits: 0.5}, Started: time.Now(),
	})
	if output.Code(err) != output.ExitFailure || !res.IsError || res.Error != err.Error() || res.ExitCode != output.ExitFailure {
		t.Fatalf("refused path: %v, result %+v", err, res)
	}
	if res.Output != "the answer\n" || res.SessionID != "s1" || res.StopReason != "end_turn" || res.Usage == nil || res.Usage.Credits != 0.5 ||
		len(res.RefusedPaths) != 1 || res.RefusedPaths[0] != "/w/secret.txt" || len(res.Denied) != 1 ||
		len(res.RefusedRequests) != 1 || res.RefusedRequests[0] != "write /w/work/x.txt" {
		t.Fatalf("result %+v", res)
	}

	// A write or a command no permission covered, under --on-permission fail: exit 1 with its
	// message, the agent's stop reason kept.
	unasked := &approval.UnaskedError{Access: acpclient.Access{Method: "terminal/create", Command: []string{"sh", "-c", "ls"},
		Tool: agent.ToolCall{Kind: "execute", Title: "Run sh -c ls"}}}
	res, err = askrun.Report(askrun.Run{Backend: acpclient.BackendACP, Agent: agent.Result{Output: "done\n"}, StopReason: "end_turn",
		Unasked: []string{unasked.Access.String()}, UnaskedErr: unasked, Started: time.Now()})
	want := "refused to run sh -c ls: the agent did not ask permission for it (terminal/create) and nothing allowed it; " +
		"to allow it, run again with --trust-tools shell (or --yolo to trust every tool)"
	if output.Code(err) != output.ExitFailure || err.Error() != want || res.Error != want || res.StopReason != "end_turn" ||
		len(res.RefusedRequests) != 1 || res.RefusedRequests[0] != "run sh -c ls" {
		t.Fatalf("unasked: %v, result %+v", err, res)
	}

	res, err = askrun.Report(askrun.Run{Backend: acpclient.BackendChat, Agent: agent.Result{TimedOut: true, ExitCode: -1},
		Timeout: 2 * time.Second, StopReason: "end_turn", Started: time.Now()})
	if output.Code(err) != output.ExitTimeout || res.IsError || res.ExitCode != output.ExitTimeout || !res.TimedOut ||
		res.AgentExitCode != -1 || res.Usage != nil || res.RefusedPaths != nil {
		t.Fatalf("timeout: %v, result %+v", err, res)
	}
}
