package acpclient

import (
	"os"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestLearnedInitialize: the answer kept is given back for the same command line and binary only;
// another command line, a changed binary or a damaged file give nothing.
func TestLearnedInitialize(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "state", "agent-initialize.json")
	argv := []string{bin, "acp"}
	resp := acp.InitializeResponse{ProtocolVersion: 1, AgentCapabilities: acp.AgentCapabilities{McpCapabilities: acp.McpCapabilities{Http: true}}}
	if _, ok := LearnedInitialize(file, argv); ok {
		t.Fatal("learned before anything was kept")
	}
	if err := RememberInitialize(file, argv, resp); err != nil {
		t.Fatal(err)
	}
	got, ok := LearnedInitialize(file, argv)
	if !ok || !got.AgentCapabilities.McpCapabilities.Http {
		t.Fatalf("learned %+v, %v", got, ok)
	}
	if _, ok := LearnedInitialize(file, []string{bin, "acp", "--agent", "x"}); ok {
		t.Error("another command line took what this one learned")
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n# upgraded\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := LearnedInitialize(file, argv); ok {
		t.Error("a changed binary took what the old one learned")
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := LearnedInitialize(file, argv); ok {
		t.Error("a damaged file gave an answer")
	}
	if err := RememberInitialize(file, argv, resp); err != nil {
		t.Fatalf("a damaged file is rewritten: %v", err)
	}
	if _, ok := LearnedInitialize(file, argv); !ok {
		t.Error("nothing learned after the damaged file was rewritten")
	}
}
