//go:build unix && !qkit_lite

package cmd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/contextfiles"
)

// TestACPSessionSkipsLinkedOutBase: an ACP session builds its context through the same core as ask
// and context prompt. In a session whose folder is a cloned repository with docs -> a folder outside
// it, the rules docs/** and docs send nothing from there (a warning says why), while a file inside
// the repository still reaches the agent.
func TestACPSessionSkipsLinkedOutBase(t *testing.T) {
	a, _, _, errOut := agentApp(t, "q", []string{"FAKEQ_ECHO_PROMPT=1"}, "agent.backend=chat", "acp.enabled=true")
	t.Setenv("GOMEMLIMIT", "off")
	top := t.TempDir()
	repo, secret := filepath.Join(top, "repo"), filepath.Join(top, "secret")
	for path, text := range map[string]string{filepath.Join(secret, "id_rsa"): "PRIVATE KEY\n", filepath.Join(repo, "notes.md"): "remember the milk\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(repo, "docs")); err != nil {
		t.Fatal(err)
	}
	files := contextfiles.NewStore(a.Config.Paths.Config)
	if _, err := files.Add(context.Background(), contextfiles.Target{Profile: contextfiles.DefaultProfile}, []string{"docs/**", "docs", "notes.md"},
		contextfiles.AddOptions{Cwd: repo, Force: true}); err != nil {
		t.Fatal(err)
	}

	fromServer, toServer, wait := serveOnPipes(t, a, func() error {
		return runACPServe(context.Background(), a, &acpServeOptions{})
	})
	client := &acpTestClient{}
	conn := acp.NewClientSideConnection(client, toServer, fromServer)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: repo, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}}); err != nil {
		t.Fatal(err)
	}
	said := client.said()
	if !strings.Contains(said, "remember the milk") || strings.Contains(said, "PRIVATE KEY") {
		t.Errorf("the agent was sent:\n%s", said)
	}
	_ = toServer.Close()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if want := "skipping " + filepath.Join(repo, "docs") + ": it links to " + secret + ", outside " + repo; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
}
