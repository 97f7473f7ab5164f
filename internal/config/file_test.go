package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configAt writes content as the config file of a fresh QKIT_HOME and loads it.
func configAt(t *testing.T, content string) (*Config, string) {
	t.Helper()
	home := t.TempDir()
	file := filepath.Join(home, "config", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": home})})
	if err != nil {
		t.Fatalf("load %q: %v", content, err)
	}
	return c, file
}

func reload(t *testing.T, c *Config) *Config {
	t.Helper()
	n, err := Load(LoadOptions{File: c.File, LookupEnv: envOf(map[string]string{"QKIT_HOME": filepath.Dir(c.Paths.Config)})})
	if err != nil {
		data, _ := os.ReadFile(c.File)
		t.Fatalf("the edited file does not load: %v\n%s", err, data)
	}
	return n
}

// TestSetOnEmptySection: "agent:" on its own line (empty, ~ or null) gets the key inside it, not a
// second "agent:" that makes every later load fail.
func TestSetOnEmptySection(t *testing.T) {
	for _, content := range []string{
		"agent:\n",
		"agent: ~\n",
		"# mine\nagent: null # later\nlog:\n  level: debug\n",
		"Agent:\n",
	} {
		c, file := configAt(t, content)
		if len(c.Unknown) > 0 {
			t.Errorf("%q: the empty section is reported as unknown settings: %v", content, c.Unknown)
		}
		if err := c.Set(context.Background(), "agent.command", "kiro-cli"); err != nil {
			t.Fatalf("%q: %v", content, err)
		}
		c = reload(t, c)
		data, _ := os.ReadFile(file)
		if got := AgentCommand.Get(c); got != "kiro-cli" {
			t.Errorf("%q: agent.command %q after set; file:\n%s", content, got, data)
		}
		if strings.Count(strings.ToLower(string(data)), "agent:") != 1 {
			t.Errorf("%q: the section is written twice:\n%s", content, data)
		}
		for _, keep := range []string{"# mine", "# later", "level: debug"} {
			if strings.Contains(content, keep) && !strings.Contains(string(data), keep) {
				t.Errorf("%q: lost %q:\n%s", content, keep, data)
			}
		}
	}
}

// TestSetRefusesValueSection: a section holding a value cannot take a key, nor a setting holding a
// section a value; the file is untouched.
func TestSetRefusesValueSection(t *testing.T) {
	for content, want := range map[string]string{
		"agent: 5\n":         `line 1: "agent" holds the value "5", not a section of settings`,
		"x: 1\nagent: [a]\n": `line 2: "agent" holds a list, not a section of settings`,
		// The other way round: a setting holding a section; what is under it is not dropped.
		"agent:\n  command:\n    x: 1\n": `line 2: "command" holds a section of settings, not a value`,
	} {
		c, file := configAt(t, content)
		err := c.Set(context.Background(), "agent.command", "kiro-cli")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%q: Set = %v, want an error naming the file and %q", content, err, want)
		}
		if data, _ := os.ReadFile(file); string(data) != content {
			t.Errorf("%q: file changed to %q", content, data)
		}
	}
}

// TestSetKeepsOtherDocuments: in a file of several YAML documents, the first (the one read) is
// edited and the others are kept.
func TestSetKeepsOtherDocuments(t *testing.T) {
	content := "log:\n  level: debug\n---\n# second\nother: 2\n---\nthird: [1, 2]\n"
	c, file := configAt(t, content)
	if err := c.Set(context.Background(), "agent.command", "kiro-cli"); err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(context.Background(), "log.level"); err != nil {
		t.Fatal(err)
	}
	c = reload(t, c)
	data, _ := os.ReadFile(file)
	if AgentCommand.Get(c) != "kiro-cli" || LogLevel.Value(c).Source != SourceDefault {
		t.Fatalf("set/reset did not apply:\n%s", data)
	}
	want := "agent:\n  command: kiro-cli\n---\n# second\nother: 2\n---\nthird: [1, 2]\n"
	if string(data) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", data, want)
	}
}

// TestSetRefusesNonText: a config file that is not UTF-8 text is never replaced, even when the
// YAML reader sees nothing in it; a leading UTF-8 byte-order mark is text and is kept.
func TestSetRefusesNonText(t *testing.T) {
	for _, content := range []string{"\xfe\xff\x00\n", "\xff\xfe\n\x00", "\xef\xbb\xbf\xef\xbb\xbf\n", "a: \x01\n"} {
		home := t.TempDir()
		file := filepath.Join(home, "config.yaml")
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c := &Config{File: file}
		err := c.Set(context.Background(), "agent.command", "kiro-cli")
		if err == nil || !strings.Contains(err.Error(), "text") || !strings.Contains(err.Error(), "left unchanged") {
			t.Errorf("%q: Set = %v, want a refusal", content, err)
		}
		if data, _ := os.ReadFile(file); string(data) != content {
			t.Errorf("%q: file changed to %q", content, data)
		}
	}
	c, file := configAt(t, "\xef\xbb\xbfagent:\n  timeout: 5m\n")
	if err := c.Set(context.Background(), "agent.command", "kiro-cli"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(file); string(data) != "\xef\xbb\xbfagent:\n  timeout: 5m\n  command: kiro-cli\n" {
		t.Fatalf("file %q", data)
	}
}

// FuzzEditFile: whatever the file holds, Set either refuses and leaves it byte for byte, or writes
// a file that loads with the new value.
func FuzzEditFile(f *testing.F) {
	for _, s := range []string{"", "agent:\n", "agent: 5\n", "a: 1\n---\nb: 2\n", "\xef\xbb\xbf\x00garbage",
		"Agent:\n  Command: x\n", "agent.command: x\n", "- a\n", "a: &x {b: 1}\nagent: *x\n", "agent: {}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c := &Config{File: file}
		if err := c.Set(context.Background(), "agent.command", "kiro-cli"); err != nil {
			if data, _ := os.ReadFile(file); string(data) != content {
				t.Fatalf("refused (%v) but changed %q to %q", err, content, data)
			}
			return
		}
		n, err := Load(LoadOptions{File: file, LookupEnv: envOf(map[string]string{"QKIT_HOME": dir})})
		if err != nil {
			data, _ := os.ReadFile(file)
			t.Fatalf("%q edited into %q, which does not load: %v", content, data, err)
		}
		if got := AgentCommand.Get(n); got != "kiro-cli" {
			data, _ := os.ReadFile(file)
			t.Fatalf("%q edited into %q reads agent.command %q", content, data, got)
		}
	})
}

// TestSetAfterLastResetIsBlockStyle: the last reset leaves "{}", and the settings set after it are
// written in block style, not as "{agent: {command: kiro-cli}}". A flow mapping with entries that a
// person wrote keeps its style.
func TestSetAfterLastResetIsBlockStyle(t *testing.T) {
	c, file := configAt(t, "agent:\n  command: kiro-cli\n")
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"agent.command", "kiro-cli"}, {"agent.timeout", "5m"}, {"acp.enabled", "true"}} {
		if err := c.Set(context.Background(), kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(file)
	if want := "agent:\n  command: kiro-cli\n  timeout: 5m\nacp:\n  enabled: true\n"; string(data) != want {
		t.Errorf("after reset and set the file is\n%s\nwant\n%s", data, want)
	}
	reload(t, c)

	c, file = configAt(t, "agent: {}\nacp: {enabled: true}\n")
	if err := c.Set(context.Background(), "agent.command", "kiro-cli"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(context.Background(), "acp.enabled", "false"); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(file)
	if want := "agent:\n  command: kiro-cli\nacp: {enabled: false}\n"; string(data) != want {
		t.Errorf("the file is\n%s\nwant\n%s", data, want)
	}
}
