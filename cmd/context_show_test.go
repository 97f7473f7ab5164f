package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/contextfiles"
)

// TestRenderReportEscapesNames: a file name from a repository cannot write escape sequences or
// forge lines on the terminal through `context show`.
func TestRenderReportEscapesNames(t *testing.T) {
	rep := &contextfiles.Report{
		Profile: "default", MaxTokens: 100,
		Rules:   contextfiles.Rules{Profile: []contextfiles.Rule{{Path: "*", Matches: 1}}},
		Files:   []contextfiles.File{{Path: "/w/a\x1b]52;c;eA==\x07.md", Scope: "profile", Tokens: 1, Relative: true}},
		Skipped: []contextfiles.Skipped{{Path: "/w/x\nprofile fake.md", Scope: "profile", Reason: "it links to /s/\u202ekey, outside /w", Relative: true}},
	}
	var b bytes.Buffer
	if err := renderReport(&b, rep, pathShower{cwd: "/w", home: "/h"}, false, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Contains(out, "\nprofile fake.md") {
		t.Fatalf("raw control characters reached the output:\n%q", out)
	}
	for _, want := range []string{`a\x1b]52;c;eA==\x07.md (~1 token)`, `x\x0aprofile fake.md (it links to /s/\u202ekey, outside /w)`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPathShower: a relative rule's file reads relative to the working directory; any other file
// as named, under ~ or absolute, whatever folder show runs in.
func TestPathShower(t *testing.T) {
	s := pathShower{cwd: "/h/proj", home: "/h"}
	for _, tc := range []struct {
		path     string
		relative bool
		want     string
	}{
		{"/h/proj/docs/a.md", true, "docs/a.md"},
		{"/h/proj/docs/a.md", false, "~/proj/docs/a.md"},
		{"/h/notes/style.md", false, "~/notes/style.md"},
		{"/h/notes/style.md", true, "~/notes/style.md"}, // ../notes: outside cwd
		{"/etc/rules.md", false, "/etc/rules.md"},
	} {
		if got := s.show(tc.path, tc.relative); got != tc.want {
			t.Errorf("show(%s, %v) = %q, want %q", tc.path, tc.relative, got, tc.want)
		}
	}
	if got := (pathShower{cwd: "/", home: "/"}).show("/x/y.md", false); got != "/x/y.md" {
		t.Errorf("home /: %q", got)
	}
}
