package sessions

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSummaries10k lists 10,000 sessions (sessions list's query and scan).
func BenchmarkSummaries10k(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	dir := b.TempDir()
	for i := range 10_000 {
		mustCreate(b, s, fmt.Sprintf("%08x", i), dir, BackendText, t0.Add(time.Duration(i)*time.Second))
	}
	b.ResetTimer()
	for b.Loop() {
		if l, err := s.Summaries(ctx, Filter{}); err != nil || len(l) != 10_000 {
			b.Fatal(len(l), err)
		}
	}
}

// BenchmarkExportImport1000Turns exports a 1,000-turn session and imports it as a new one.
func BenchmarkExportImport1000Turns(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	mustCreate(b, s, "long", b.TempDir(), BackendACP, t0)
	for i := range 1000 {
		if err := s.AppendTurn(ctx, "long", Turn{Prompt: fmt.Sprint("prompt ", i), Reply: "a reply of a few words",
			Tools: []ToolCall{{Name: "fs_write", Status: "completed"}}}, t0); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	b.ResetTimer()
	for b.Loop() {
		e, err := s.Export(ctx, "long")
		if err != nil {
			b.Fatal(err)
		}
		n++
		if _, err := s.Import(ctx, e, fmt.Sprint("copy", n), t0); err != nil {
			b.Fatal(err)
		}
	}
}
