//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// internalSuite: `qkit exec internal context show --flag json` (the same JSON, run through
// the registry) against `qkit context show --json` (median of interleaved runs; target: at most
// 1.2x), and the internal_command tool's round trip for `context show` over stdio.
func internalSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "internal")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	env := b.env(home)
	// A realistic context: a handful of files in the profile.
	for i := range 5 {
		name := filepath.Join(work, fmt.Sprintf("notes-%d.md", i))
		if err := os.WriteFile(name, bytes.Repeat([]byte("Some notes about the project.\n"), 200), 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := runOut(env, work, b.qkit, "context", "add", "notes-*.md"); err != nil {
		return nil, err
	}

	const n = 40
	meds, err := interleaved(n, env, work,
		[]string{b.qkit, "context", "show", "--json"},
		[]string{b.qkit, "exec", "internal", "context", "show", "--flag", "json"})
	if err != nil {
		return nil, err
	}
	direct, viaExec := meds[0], meds[1]
	figs := []figure{
		info("internal: qkit context show --json median", ms(direct), "ms"),
		info("internal: qkit exec internal context show --flag json median", ms(viaExec), "ms"),
		atMost("internal: exec internal / direct", float64(viaExec)/float64(direct), "x", 1.2),
	}
	rt, err := mcpRoundTrip(b, env, work, 200)
	if err != nil {
		return nil, err
	}
	return append(figs, rt...), nil
}

// mcpRoundTrip starts `qkit mcp serve` once, then times n calls of internal_command for
// `context show` from the Go SDK client over stdio.
func mcpRoundTrip(b *bench, env []string, dir string, n int) ([]figure, error) {
	ctx := context.Background()
	c := exec.Command(b.qkit, "mcp", "serve")
	c.Env, c.Dir = env, dir
	start := time.Now()
	client := mcp.NewClient(&mcp.Implementation{Name: "qkit-bench", Version: "0"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp serve: %w", err)
	}
	defer sess.Close()
	args := map[string]any{"command": "context", "subcommand": "show"}
	times := make([]time.Duration, 0, n)
	for i := range n + 1 {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "internal_command", Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("internal_command: %w", err)
		}
		if res.IsError {
			return nil, fmt.Errorf("internal_command: tool error: %v", res.Content)
		}
		if i == 0 {
			times = append(times, time.Since(start)) // spawn + initialize + first call, kept apart
			continue
		}
		times = append(times, time.Since(t0))
	}
	return []figure{
		info("internal: mcp serve start + initialize + first internal_command", ms(times[0]), "ms"),
		info("internal: internal_command context show round trip (stdio) median", ms(median(times[1:])), "ms"),
	}, nil
}
