package contextfiles

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkExpand expands **/*.md over a 10,000-file tree (3% matching).
func BenchmarkExpand(b *testing.B) {
	s := NewStore(b.TempDir())
	root := b.TempDir()
	for i := 0; i < 10_000; i++ {
		name := fmt.Sprintf("d%d/e%d/f%d.go", i/1000, i/100%10, i)
		if i%33 == 0 {
			name = strings.TrimSuffix(name, ".go") + ".md"
		}
		write(b, filepath.Join(root, name), "x\n")
	}
	refs := []ruleRef{{ScopeProfile, "**/*.md"}}
	b.ResetTimer()
	for b.Loop() {
		if ex := s.expand(refs, root); len(ex.files) != 304 {
			b.Fatalf("%d files", len(ex.files))
		}
	}
}

// BenchmarkPrompt builds the prompt block from 200 files of 100 KB.
func BenchmarkPrompt(b *testing.B) {
	s := NewStore(b.TempDir())
	root := b.TempDir()
	content := strings.Repeat("context file text\n", 100_000/18)
	for i := 0; i < 200; i++ {
		write(b, filepath.Join(root, fmt.Sprintf("f%03d.md", i)), content)
	}
	if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"*.md"}, AddOptions{Cwd: root}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(200 * len(content)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := s.Prompt(DefaultProfile, root, 0, "hi"); err != nil {
			b.Fatal(err)
		}
	}
}
