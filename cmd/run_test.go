package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
)

// TestRunFunctions drives the settings, version, context and exec commands through their runX
// functions, in-process, with an options struct and no command line: the shape every command of
// these groups has, so its logic is tested without a process or a cobra tree.
func TestRunFunctions(t *testing.T) {
	t.Setenv("QKIT_HOME", t.TempDir())
	streams, _, out, errOut := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "1.2.3", Commit: "0123456789abcdef", Go: "go1.26"})
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	if err := runSettingsSet(context.Background(), a, &settingsSetOptions{}, "agent.timeout", "5m"); err != nil {
		t.Fatal(err)
	}
	if err := runSettingsSet(context.Background(), a, &settingsSetOptions{}, "agent.timeout", "soon"); output.Code(err) != output.ExitUsage {
		t.Fatalf("a bad value: %v (exit %d)", err, output.Code(err))
	}
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runSettingsGet(a, &settingsGetOptions{asJSON: true}, "agent.timeout"); err != nil {
		t.Fatal(err)
	}
	var got settingJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Value != "5m" || got.Default != "3m" || got.Source != "file" {
		t.Fatalf("settings get --json: %s (%v)", out.String(), err)
	}
	if err := runSettingsReset(context.Background(), a, &settingsResetOptions{all: true, yes: true}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := runSettingsReset(context.Background(), a, &settingsResetOptions{}, nil, ""); output.Code(err) != output.ExitUsage {
		t.Fatalf("reset with nothing to reset: %v", err)
	}
	out.Reset()
	if err := runVersion(a, &versionOptions{}); err != nil || out.String() != "qkit 1.2.3 (commit 0123456789ab) go1.26\n" {
		t.Fatalf("version: %q %v", out.String(), err)
	}
	if err := runContextSwitch(a, &contextSwitchOptions{create: true}, "work"); err != nil || !strings.Contains(errOut.String(), "Created and switched to profile 'work'") {
		t.Fatalf("context switch --create: %v %q", err, errOut.String())
	}
	out.Reset()
	if err := runExec(context.Background(), a, &execInternalOptions{asJSON: true}, []string{"ask", "hi"}); output.Code(err) != output.ExitUsage ||
		!strings.Contains(out.String(), `"error": "Unknown command: ask.`) {
		t.Fatalf("exec internal --json ask: %v %s", err, out.String())
	}
}

// TestQuestionsRunFunctions drives questions ask, list, show, answer and reject through their runX
// functions: a set that times out still prints its JSON, the next is answered and the last
// rejected, and list and show report each.
func TestQuestionsRunFunctions(t *testing.T) {
	t.Setenv("QKIT_HOME", t.TempDir())
	streams, in, out, _ := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "dev"})
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	set := `{"questions":[{"question":"Which language should we use?","header":"Language","options":[{"label":"Go"},{"label":"TypeScript"}]}]}`
	in.WriteString(set)
	if err := runQuestionsAsk(context.Background(), a, &questionsAskOptions{timeout: "1ms", asJSON: true}); output.Code(err) != output.ExitTimeout ||
		!strings.Contains(out.String(), `"status": "timed_out"`) {
		t.Fatalf("ask --json --timeout 1ms: %v (exit %d) %s", err, output.Code(err), out.String())
	}
	if err := runQuestionsAsk(context.Background(), a, &questionsAskOptions{timeout: "soon"}); output.Code(err) != output.ExitUsage {
		t.Fatalf("ask --timeout soon: %v", err)
	}
	for _, verdict := range []string{"answer", "reject"} {
		in.WriteString(set)
		asked := make(chan error, 1)
		go func() {
			asked <- runQuestionsAsk(context.Background(), a, &questionsAskOptions{file: "-", timeout: "30s"})
		}()
		st, err := openQuestions(a)
		if err != nil {
			t.Fatal(err)
		}
		p, err := st.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 30 * time.Second})
		_ = st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if verdict == "answer" {
			err = runQuestionsAnswer(context.Background(), a, &answerOptions{answers: []string{"1=Go"}}, []string{p.ShortID()})
		} else {
			err = runQuestionsReject(a, &questionsRejectOptions{reason: "not now"}, []string{p.ShortID()})
		}
		if err != nil {
			t.Fatalf("%s: %v", verdict, err)
		}
		want := output.ExitOK
		if verdict == "reject" {
			want = output.ExitRejected
		}
		if err := <-asked; output.Code(err) != want {
			t.Fatalf("ask after %s: %v (exit %d)", verdict, err, output.Code(err))
		}
	}
	out.Reset()
	if err := runQuestionsList(a, &questionsListOptions{}); err != nil || out.String() != "" {
		t.Fatalf("list with nothing pending: %v %q", err, out.String())
	}
	if err := runQuestionsList(a, &questionsListOptions{all: true, asJSON: true}); err != nil {
		t.Fatal(err)
	}
	var listed []sessionJSON
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 3 {
		t.Fatalf("list --all --json: %v %s", err, out.String())
	}
	var statuses []string
	for _, s := range listed {
		statuses = append(statuses, string(s.Status))
	}
	if strings.Join(statuses, " ") != "timed_out completed rejected" {
		t.Fatalf("list --all: %v", statuses)
	}
	out.Reset()
	if err := runQuestionsShow(a, &questionsShowOptions{}, []string{listed[2].ShortID}); err != nil ||
		!strings.Contains(out.String(), "Rejected: not now") {
		t.Fatalf("show: %v %s", err, out.String())
	}
	if err := runQuestionsShow(a, &questionsShowOptions{}, []string{"ffffffff"}); output.Code(err) != output.ExitNotFound {
		t.Fatalf("show of no set: %v", err)
	}
}
