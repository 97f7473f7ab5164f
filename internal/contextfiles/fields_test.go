package contextfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestUnknownFieldsAreKept: fields another tool wrote into a context file (Q's "hooks") survive
// add, rm and clear, in their order; "paths" is rewritten in its place.
func TestUnknownFieldsAreKept(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "a.md", "b.md")
	orig := `{"hooks": {"agentSpawn": {"cmd": ["git", "status"]}}, "paths": ["a.md"], "x-other": 1}`
	write(t, s.globalPath(), orig)
	tg := Target{Global: true}
	if _, err := s.Add(context.Background(), tg, []string{"b.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	want := `{
  "hooks": {
    "agentSpawn": {
      "cmd": [
        "git",
        "status"
      ]
    }
  },
  "paths": [
    "a.md",
    "b.md"
  ],
  "x-other": 1
}
`
	if data, _ := os.ReadFile(s.globalPath()); string(data) != want {
		t.Fatalf("after add:\n%s\nwant:\n%s", data, want)
	}
	if _, _, err := s.Remove(context.Background(), tg, []string{"a.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Clear(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	data, _ := os.ReadFile(s.globalPath())
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["x-other"] != float64(1) || got["hooks"] == nil || !reflect.DeepEqual(got["paths"], []any{}) {
		t.Fatalf("after rm and clear: %s", data)
	}

	// A file without "paths" gets it first.
	write(t, s.profilePath(DefaultProfile), `{"hooks": {}}`)
	if _, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"a.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(s.profilePath(DefaultProfile)); string(data) != "{\n  \"paths\": [\n    \"a.md\"\n  ],\n  \"hooks\": {}\n}\n" {
		t.Fatalf("profile file:\n%s", data)
	}
}

// FuzzContextConfig: a context file either is refused as corrupt, or reads as encoding/json reads
// it and survives a rewrite with every field (the last of a repeated key) and its paths.
func FuzzContextConfig(f *testing.F) {
	for _, s := range []string{`{"paths": ["a"]}`, `{"hooks": {"x": [1]}, "paths": []}`, `[]`, `null`, `{"paths": "x"}`,
		`{"paths": null}`, `{"a": 1, "a": 2}`, `{"paths": ["a"]} {}`, ``, `{"paths": ["\u00e9"], "b": "\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig("f.json", data)
		if err != nil {
			return
		}
		var std struct {
			Paths []string `json:"paths"`
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &std); err != nil {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", data, err)
			}
			if !reflect.DeepEqual(std.Paths, c.Paths) && (len(std.Paths) > 0 || len(c.Paths) > 0) {
				t.Fatalf("%q: paths %q, encoding/json reads %q", data, c.Paths, std.Paths)
			}
		}
		out := encodeConfig(c)
		again, err := parseConfig("f.json", out)
		if err != nil {
			t.Fatalf("%q rewritten as %q, which does not parse: %v", data, out, err)
		}
		if !reflect.DeepEqual(again.Paths, c.Paths) && (len(again.Paths) > 0 || len(c.Paths) > 0) {
			t.Fatalf("paths %q became %q", c.Paths, again.Paths)
		}
		var before, after map[string]any
		if len(bytes.TrimSpace(data)) > 0 {
			_ = json.Unmarshal(data, &before)
			_ = json.Unmarshal(out, &after)
			for _, m := range []map[string]any{before, after} {
				for k := range m {
					if strings.EqualFold(k, "paths") {
						delete(m, k)
					}
				}
			}
			if len(before) > 0 && !reflect.DeepEqual(before, after) {
				t.Fatalf("fields %v became %v", before, after)
			}
		}
	})
}

// A field that holds a list of rules in a file without "paths" is a misspelling whose rules would
// silently not apply: Collect warns of it. Q's other fields, and files with "paths", say nothing.
func TestStrayRulesAreReported(t *testing.T) {
	for content, want := range map[string]string{
		`{"pathz": ["a.md"], "hooks": {"x": ["y"]}}`: `"pathz" holds a list of rules but is not "paths"`,
		`{"Path": ["a.md"]}`:                         `"Path" holds a list of rules`,
		`{"paths": ["a.md"], "extra": ["b.md"]}`:     "",
		`{"hooks": {"conversation_start": []}}`:      "",
		`{"pathz": []}`:                              "",
	} {
		c, err := parseConfig("f.json", []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(c.strayRules("f.json"), "\n")
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", content, got, want)
		}
	}
}
