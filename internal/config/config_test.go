package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	if AgentCommand.Get(c) != "q" || AgentTimeout.Get(c) != 180*time.Second ||
		AgentMaxResponseSize.Get(c) != 2<<20 || QuestionsTimeout.Get(c) != 30*time.Minute ||
		ACPEnabled.Get(c) || ContextMaxTokens.Get(c) != 150000 || !AgentStripANSI.Get(c) {
		t.Fatalf("unexpected defaults: %+v", c.All())
	}
	for _, v := range c.All() {
		if v.Source != SourceDefault {
			t.Errorf("%s: source %s", v.Key.Name, v.Source)
		}
	}
}

func TestPaths(t *testing.T) {
	p, err := ResolvePaths(envOf(map[string]string{"QKIT_HOME": "/h"}))
	if err != nil || p.Config != "/h/config" || p.Data != "/h/data" || p.State != "/h/state" {
		t.Fatalf("%+v %v", p, err)
	}
	p, _ = ResolvePaths(envOf(map[string]string{"HOME": "/u", "XDG_CONFIG_HOME": "/x/c"}))
	if p.Config != "/x/c/qkit" || p.Data != "/u/.local/share/qkit" || p.State != "/u/.local/state/qkit" {
		t.Fatalf("%+v", p)
	}
	// A relative XDG value is ignored, as the spec says.
	p, _ = ResolvePaths(envOf(map[string]string{"HOME": "/u", "XDG_DATA_HOME": "rel"}))
	if p.Data != "/u/.local/share/qkit" {
		t.Fatalf("%+v", p)
	}
}

func TestSeedEnvNames(t *testing.T) {
	env := map[string]string{
		"QKIT_HOME":               t.TempDir(),
		"AGENT_TIMEOUT":           "45",
		"AGENT_MAX_RESPONSE_SIZE": "1000",
		"ENABLE_ADDITIONAL_TOOLS": " Q_Developer_Agent , other",
	}
	c, err := Load(LoadOptions{LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if AgentTimeout.Get(c) != 45*time.Second {
		t.Errorf("timeout %v", AgentTimeout.Get(c))
	}
	if AgentMaxResponseSize.Get(c) != 1000 {
		t.Errorf("size %d", AgentMaxResponseSize.Get(c))
	}
	if !c.ToolEnabled("q-developer-agent") || c.ToolEnabled("nope") {
		t.Errorf("tools %v", ToolsEnabled.Get(c))
	}
	env["ENABLE_ADDITIONAL_TOOLS"] = "ALL"
	c, _ = Load(LoadOptions{LookupEnv: envOf(env)})
	if !c.ToolEnabled("anything") {
		t.Error("all does not enable everything")
	}
}

func TestPrecedence(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"QKIT_HOME": home}
	c, _ := Load(LoadOptions{LookupEnv: envOf(env)})
	if err := c.Set(context.Background(), "agent.timeout", "10s"); err != nil {
		t.Fatal(err)
	}
	check := func(want time.Duration, src Source) {
		t.Helper()
		c, err := Load(LoadOptions{LookupEnv: envOf(env), Overrides: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		if v := AgentTimeout.Value(c); AgentTimeout.Get(c) != want || v.Source != src {
			t.Fatalf("got %v from %s, want %v from %s", AgentTimeout.Get(c), v.Source, want, src)
		}
	}
	check(10*time.Second, SourceFile)
	env["AGENT_TIMEOUT"] = "20"
	check(20*time.Second, SourceEnv)
	env["QKIT_AGENT_TIMEOUT"] = "30s"
	check(30*time.Second, SourceEnv)
	c, _ = Load(LoadOptions{LookupEnv: envOf(env), Overrides: map[string]string{"agent.timeout": "40s"}})
	if AgentTimeout.Get(c) != 40*time.Second || AgentTimeout.Value(c).Source != SourceFlag {
		t.Fatal("flag does not win")
	}
}

func TestSetResetPreserveOtherKeys(t *testing.T) {
	home := t.TempDir()
	c, _ := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": home})})
	for k, v := range map[string]string{"agent.command": "kiro-cli", "acp.enabled": "true", "tools.enabled": "a,b"} {
		if err := c.Set(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reset(context.Background(), "acp.enabled"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(home, "config", "config.yaml"))
	s := string(data)
	if !strings.Contains(s, "command: kiro-cli") || strings.Contains(s, "acp") || !strings.Contains(s, "- a") {
		t.Fatalf("file:\n%s", s)
	}
	if fi, _ := os.Stat(filepath.Join(home, "config", "config.yaml")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(home, "config", "config.yaml"))
	if strings.TrimSpace(string(data)) != "{}" {
		t.Fatalf("after reset --all: %q", data)
	}
}

func TestParseSizeAndDuration(t *testing.T) {
	sizes := map[string]int64{"2MB": 2 << 20, "512KiB": 512 << 10, "1000": 1000, "1.5mb": 3 << 19, "3 GiB": 3 << 30, "10b": 10}
	for in, want := range sizes {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "MB", "1e300", "NaN", "nanMB", "inf"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	durs := map[string]time.Duration{"90s": 90 * time.Second, "3m": 3 * time.Minute, "180": 180 * time.Second, "0": 0, "1.5": 1500 * time.Millisecond}
	for in, want := range durs {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-5s", "-1", "soon", "1e300", "NaN"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
	if FormatSize(2<<20) != "2MB" || FormatSize(1000) != "1000" {
		t.Error("FormatSize")
	}
}

func TestSuggest(t *testing.T) {
	if s := Suggest("agent.tmeout"); len(s) == 0 || s[0] != "agent.timeout" {
		t.Fatalf("%v", s)
	}
	if s := Suggest("zzzzzzzzzzzzzzzzzzzz"); len(s) != 0 {
		t.Fatalf("%v", s)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2MB", "512KiB", "1000", "1.5gb", "", "-1", "9999999999999GB", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "3m", "180", "0", "-5s", "1e300", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
	})
}

// TestSetResetOtherSpellings: viper reads keys in any case and flat dotted keys too, so set and
// reset must change those entries rather than write beside them (which left the old value in force).
func TestSetResetOtherSpellings(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, "config", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	orig := "Agent:\n  Command: foo\n  model: m\nagent.timeout: 5m\nLOG.LEVEL: debug\n"
	if err := os.WriteFile(file, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func() *Config {
		t.Helper()
		c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": home})})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := load()
	if AgentCommand.Get(c) != "foo" || AgentTimeout.Get(c) != 5*time.Minute || LogLevel.Get(c) != "debug" {
		t.Fatalf("read: %v %v %v", AgentCommand.Get(c), AgentTimeout.Get(c), LogLevel.Get(c))
	}
	if err := c.Set(context.Background(), "agent.command", "bar"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(context.Background(), "agent.timeout", "7m"); err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(context.Background(), "log.level"); err != nil {
		t.Fatal(err)
	}
	c = load()
	data, _ := os.ReadFile(file)
	if AgentCommand.Get(c) != "bar" || AgentTimeout.Get(c) != 7*time.Minute ||
		LogLevel.Value(c).Source != SourceDefault || AgentModel.Get(c) != "m" {
		t.Fatalf("after set/reset: command %q timeout %v log.level %v model %q; file:\n%s",
			AgentCommand.Get(c), AgentTimeout.Get(c), LogLevel.Value(c).Source, AgentModel.Get(c), data)
	}
}

// SkipFile loads the defaults, the environment and the overrides without reading the file (which
// may not parse), and still names the file; a bad value's error names its setting.
func TestSkipFileAndValueErrorKey(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, "config", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("agent: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"QKIT_HOME": home, "QKIT_AGENT_TIMEOUT": "soon"})
	if _, err := Load(LoadOptions{LookupEnv: env}); err == nil {
		t.Fatal("a file that does not parse loaded")
	}
	c, err := Load(LoadOptions{LookupEnv: env, SkipFile: true, Overrides: map[string]string{"agent.command": "kiro-cli"}})
	if err != nil || c.File != file || AgentCommand.Get(c) != "kiro-cli" || len(c.Problems) != 1 {
		t.Fatalf("skipping the file: %v, file %q, problems %v", err, c.File, c.Problems)
	}
	var ve *ValueError
	if !errors.As(c.Problems[0], &ve) || ve.Key != AgentTimeout.Name || ve.Source != SourceEnv || ve.Origin != "QKIT_AGENT_TIMEOUT" {
		t.Fatalf("problem %#v", c.Problems[0])
	}
}

// TestReload: Reload sees the file as it is now, with the environment and --set overrides the
// first load had.
func TestReload(t *testing.T) {
	home := t.TempDir()
	env := envOf(map[string]string{"QKIT_HOME": home, "QKIT_AGENT_COMMAND": "kiro-cli"})
	c, err := Load(LoadOptions{LookupEnv: env, Overrides: map[string]string{"log.level": "debug"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(context.Background(), "internal.trusted", "settings set"); err != nil {
		t.Fatal(err)
	}
	if len(InternalTrusted.Get(c)) != 0 {
		t.Fatalf("the loaded config changed: %v", InternalTrusted.Get(c))
	}
	now, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := InternalTrusted.Get(now); len(got) != 1 || got[0] != "settings set" {
		t.Fatalf("internal.trusted after Reload = %v", got)
	}
	if AgentCommand.Get(now) != "kiro-cli" || LogLevel.Get(now) != "debug" {
		t.Fatalf("Reload lost the environment or the overrides: %+v", now.All())
	}
}
