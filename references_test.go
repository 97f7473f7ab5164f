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
	t.Parallel()
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

// TestLicenseMatchesPackages: the LICENSE file is the license the packages declare (.goreleaser.yaml
// "license:"), and the release archives carry it.
func TestLicenseMatchesPackages(t *testing.T) {
	cfg, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*license:\s*(\S+)`).FindSubmatch(cfg)
	if m == nil {
		t.Fatal(".goreleaser.yaml declares no license")
	}
	first := map[string]string{"Apache-2.0": "Apache License\n Version 2.0, January 2004", "MIT": "MIT License"}[string(m[1])]
	if first == "" {
		t.Fatalf("no known text for license %s", m[1])
	}
	text, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(string(text)), " "); !strings.HasPrefix(got, strings.Join(strings.Fields(first), " ")) {
		t.Errorf("LICENSE does not start as the %s text does: %.80q", m[1], got)
	}
	if !regexp.MustCompile(`(?m)^\s*- LICENSE$`).Match(cfg) {
		t.Error("the release archives do not carry LICENSE")
	}
}
