//go:build !qkit_lite

package cmd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestACPServeAnswersBeforeModelList: acp serve answers initialize while the agent's model list
// (kiro-cli chat --list-models) has not come; the list comes only after that answer (the fake waits
// for a file the test writes then), and a new session's model option is the agent's list. When
// the server asked for the list before answering, the list failed first and the option fell back.
func TestACPServeAnswersBeforeModelList(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "list-ready")
	a, _, _, _ := agentApp(t, "kiro", []string{"FAKEQ_LIST_WAIT=" + ready}, "agent.backend=chat", "acp.enabled=true")
	t.Setenv("GOMEMLIMIT", "off")
	fromServer, toServer, wait := serveOnPipes(t, a, func() error {
		return runACPServe(context.Background(), a, &acpServeOptions{})
	})
	conn := acp.NewClientSideConnection(&acpTestClient{}, toServer, fromServer)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, o := range s.ConfigOptions {
		if o.Select != nil && o.Select.Options.Ungrouped != nil {
			for _, v := range *o.Select.Options.Ungrouped {
				models = append(models, string(v.Value))
			}
		}
	}
	if !slices.Contains(models, "claude-sonnet-4.5") || slices.Contains(models, "claude-3.7-sonnet") {
		t.Fatalf("model option %q: not kiro's list", models)
	}
	_ = toServer.Close()
	if err := wait(); err != nil {
		t.Fatalf("acp serve at the end of stdin: %v", err)
	}
}
