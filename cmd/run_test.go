package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/output"
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
	if err := runSettingsSet(a, "agent.timeout", "5m"); err != nil {
		t.Fatal(err)
	}
	if err := runSettingsSet(a, "agent.timeout", "soon"); output.Code(err) != output.ExitUsage {
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
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Value != "5m0s" || got.Source != "file" {
		t.Fatalf("settings get --json: %s (%v)", out.String(), err)
	}
	if err := runSettingsReset(a, &settingsResetOptions{all: true, yes: true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := runSettingsReset(a, &settingsResetOptions{}, nil); output.Code(err) != output.ExitUsage {
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
