package cmd

import (
	"context"
	"testing"
)

// BenchmarkExecInternal measures what `exec internal` adds in-process over running the command
// directly (the registry walk, the parser check on a fresh tree, a second tree, the audit line).
func BenchmarkExecInternal(b *testing.B) {
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"direct", []string{"settings", "get", "agent.timeout"}},
		{"exec-internal", []string{"exec", "internal", "settings", "get", "agent.timeout"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.Setenv("QKIT_HOME", b.TempDir())
			for b.Loop() {
				a, _, _ := benchApp(b)
				if code := Run(context.Background(), a, tc.argv); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
