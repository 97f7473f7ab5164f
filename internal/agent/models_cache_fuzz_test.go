package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzModelCache: whatever the model cache holds, Models either answers from it with a list
// Refresh could have stored (fresh, for this agent, a model at least, each as checkModel leaves
// it, or nothing when the agent cannot list them) or asks the agent again; here the agent is
// missing, so asking again is an error naming it. Nothing panics.
func FuzzModelCache(f *testing.F) {
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":"auto"},{"id":"claude-sonnet-4.5","name":"Claude Sonnet 4.5"}],"default":"auto"}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":false,"list":{"models":null}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[]}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":" "},{"id":""}]}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":false,"list":{"models":[{"id":"x"}]}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2027-01-01T00:00:00Z","listed":true,"list":{"models":[{"id":"x"}]}}`))
	f.Add([]byte(`{"command":"other","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":"x"}]}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":"x"}]}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":"x\u001b]0;y\u0007"},{"id":"a b"}]}}`))
	f.Add([]byte(`{"command":"%s","fetched":"2026-11-25T10:00:00Z","listed":true,"list":{"models":[{"id":"x","description":"\u009b2J"}],"default":"\u202e"}}`))
	now := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		command := filepath.Join(dir, "no-such-agent")
		file := filepath.Join(dir, "agent-models.json")
		// %s stands for the agent's path, which only exists once the test runs.
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(data), "%s", command)), 0o600); err != nil {
			t.Fatal(err)
		}
		c := ModelCache{File: file, Now: func() time.Time { return now }}
		list, listed, err := c.Models(context.Background(), command)
		if err != nil {
			if !strings.Contains(err.Error(), "no-such-agent") {
				t.Fatalf("asking the missing agent: %v", err)
			}
			return
		}
		// Answered from the cache: it must be something Refresh could have stored.
		if listed && len(list.Models) == 0 {
			t.Fatalf("trusted a cached list that names no model: %q", data)
		}
		if !listed && (len(list.Models) != 0 || list.Default != "") {
			t.Fatalf("a list from an agent that cannot list: %+v", list)
		}
		for _, m := range list.Models {
			if c, ok := checkModel(m); !ok || c != m {
				t.Fatalf("model %+v from %q: not as ParseModels leaves one", m, data)
			}
		}
		if checkDefault(list.Default) != list.Default {
			t.Fatalf("default %q from %q", list.Default, data)
		}
	})
}
