package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// privateReference matches citations of documents that are not in this repository: the
// requirement documents ("seed 000", "the seed's"), the team's design and style notes and
// reference files, and tracker issues by number. Help text, README and code comments say things in
// the project's own words; docs/notes, the builders' notes, are where issues are cited.
var privateReference = regexp.MustCompile(`(?i:\bseeds? 0\d\d\b|\bthe seeds?'s?\b|\bseed's\b|\bissue \d+\b|requirement document)|\bDESIGN\.md|\bSTYLE\.md|real-agent\.md|kiro-acp\.md|peer-measurements\.md|/work/shared`)

func TestNoPrivateReferences(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "notes", "testdata", "bin", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".txtar", ".js", ".mjs", ".ts", ".1", ".yaml", ".yml", ".bash", ".zsh", ".fish":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		if path == "references_test.go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := privateReference.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: %s", path, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
