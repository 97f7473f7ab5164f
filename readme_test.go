package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/config"
)

// TestReadmeSettings: README's settings table has a row for every setting, with its default.
// A row may name several keys; `_key` after `questions.nats_tls_cert` is questions.nats_tls_key.
func TestReadmeSettings(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "| key | default | meaning |\n")
	if !ok {
		t.Fatal("README.md has no settings table (| key | default | meaning |)")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	code := regexp.MustCompile("`([^`]*)`")
	defaults := map[string]string{}
	for _, row := range strings.Split(table, "\n")[1:] {
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			t.Fatalf("not a table row: %q", row)
		}
		var last string
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") && last != "" {
				name = last[:strings.LastIndex(last, "_")] + name
			}
			defaults[name], last = strings.Trim(strings.TrimSpace(cells[2]), "`"), name
		}
	}
	for _, k := range config.Keys {
		d, ok := defaults[k.Name]
		switch {
		case !ok:
			t.Errorf("README.md's settings table has no row for %s", k.Name)
		case d != k.Default:
			t.Errorf("README.md gives %s the default %q, the setting has %q", k.Name, d, k.Default)
		}
		delete(defaults, k.Name)
	}
	for name := range defaults {
		t.Errorf("README.md's settings table has %s, which is no setting", name)
	}
}
