//go:build unix

package acpclient

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/proctest"
)

// TestTerminalKilledNamesSignal: a terminal the agent kills reports the signal by name ("SIGTERM",
// as ACP's TerminalExitStatus has it) and no exit code, not Go's "signal: terminated".
func TestTerminalKilledNamesSignal(t *testing.T) {
	d := &DirTerminals{Root: t.TempDir()}
	defer d.Close()
	ctx := t.Context()
	c, err := d.CreateTerminal(ctx, acp.CreateTerminalRequest{Command: "sh", Args: []string{"-c", "echo started; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // killed once it runs: a signal before sh's first line proves less
		o, err := d.TerminalOutput(ctx, acp.TerminalOutputRequest{TerminalId: c.TerminalId})
		if err != nil {
			t.Fatal(err)
		}
		if o.Output == "started\n" {
			break
		}
		if i > 6000 {
			t.Fatalf("the command did not start: %+v", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := d.KillTerminal(ctx, acp.KillTerminalRequest{TerminalId: c.TerminalId}); err != nil {
		t.Fatal(err)
	}
	w, err := d.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{TerminalId: c.TerminalId})
	if err != nil || w.Signal == nil || *w.Signal != "SIGTERM" || w.ExitCode != nil {
		t.Fatalf("killed: %+v %v", w, err)
	}
	o, err := d.TerminalOutput(ctx, acp.TerminalOutputRequest{TerminalId: c.TerminalId})
	if err != nil || o.ExitStatus == nil || o.ExitStatus.Signal == nil || *o.ExitStatus.Signal != "SIGTERM" || o.Output != "started\n" {
		t.Fatalf("output after the kill: %+v %v", o, err)
	}
}

// TestTerminalHelperDoesNotHoldExit: a command that exits leaving a helper that holds its output
// has exited: its status comes at once (the helper is ended with the group), not when the helper
// lets go of the pipe.
func TestTerminalHelperDoesNotHoldExit(t *testing.T) {
	root := t.TempDir()
	d := &DirTerminals{Root: root}
	defer d.Close()
	pidFile := filepath.Join(root, "helper.pid")
	c, err := d.CreateTerminal(t.Context(), acp.CreateTerminalRequest{Command: "sh", Args: []string{"-c", `sleep 60 & echo $! > helper.pid; echo done; exit 4`}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // far less than the helper's minute
	defer cancel()
	w, err := d.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{TerminalId: c.TerminalId})
	if err != nil || w.ExitCode == nil || *w.ExitCode != 4 || w.Signal != nil {
		t.Fatalf("exit: %+v %v", w, err)
	}
	data, err := os.ReadFile(pidFile)
	pid, aerr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || aerr != nil {
		t.Fatalf("helper pid %q %v", data, err)
	}
	if err := proctest.WaitGone(pid, 10*time.Second); err != nil {
		t.Fatalf("the helper: %v", err)
	}
}
