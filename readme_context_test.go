package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickStartSaysWhereTheRuleGoes: the quick start's `context add README.md` goes into the
// default profile, which is active in every folder; the README says so next to it, and how to undo
// it or keep rules per project.
func TestReadmeQuickStartSaysWhereTheRuleGoes(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "## Quick start")
	if start < 0 {
		t.Fatal("README.md has no Quick start section")
	}
	section := text[start:]
	if end := strings.Index(section[len("## Quick start"):], "\n#"); end >= 0 {
		section = section[:len("## Quick start")+end]
	}
	if !strings.Contains(section, "context add README.md") {
		t.Skip("the quick start no longer adds a context rule")
	}
	for _, want := range []string{"`default` profile", "every folder", "qkit context rm README.md", "qkit context switch"} {
		if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
			t.Errorf("the quick start adds README.md to the context but does not say %q", want)
		}
	}
}
