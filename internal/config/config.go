// Package config is the one place that knows qkit's settings, where they come from (defaults,
// config.yaml, environment, flags) and where qkit keeps its files.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// Source says where a setting's value came from.
type Source string

// The sources, weakest first.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "env"
	SourceFlag    Source = "flag"
)

// Value is one setting as loaded.
type Value struct {
	Key    Key
	Raw    string
	Parsed any
	Source Source
	// Origin names the file or variable the value came from, empty for defaults.
	Origin string
	// InFile is set when the config file holds the key, whichever source won.
	InFile bool
}

// Paths are the directories qkit reads and writes.
type Paths struct {
	Config string // settings and context configs
	Data   string // ACP sessions database
	State  string // question sessions, audit log
}

// LoadOptions says where to look. Zero values mean the process environment and default paths.
type LoadOptions struct {
	// File is the config file given by --config; empty means QKIT_CONFIG or <config>/config.yaml.
	File string
	// Overrides are values given on the command line (source "flag"), by key.
	Overrides map[string]string
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// SkipFile reads no config file: the defaults, the environment and the overrides only, for
	// `qkit doctor` when the file cannot be read or parsed. File still names the file.
	SkipFile bool
	// KeepBroken loads the defaults (and the environment and overrides) when the file's content
	// does not load, and records why in Config.Broken instead of failing: `settings reset --all`
	// runs on such a file to replace it.
	KeepBroken bool
}

// Config is the loaded configuration. It is immutable once loaded: a flag that stands in for a
// setting (ask --timeout) parses its value with the setting's handle and hands it on itself.
type Config struct {
	Paths Paths
	File  string
	// Problems are values in the file or environment that did not parse; the defaults stand in
	// for them. Commands other than `settings` refuse to run while there are any.
	Problems []error
	// Unknown are keys in the config file that are not settings (a typo such as agent.timout);
	// they are ignored, and commands warn about them.
	Unknown []UnknownKeyError
	// Broken is why the file's content did not load, when LoadOptions.KeepBroken let Load go on
	// without it.
	Broken *FileError
	values map[string]Value
	env    func(string) (string, bool)
}

// ResolvePaths derives qkit's directories from QKIT_HOME or the XDG variables.
func ResolvePaths(lookupEnv func(string) (string, bool)) (Paths, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	get := func(name string) string { v, _ := lookupEnv(name); return v }
	if h := get("QKIT_HOME"); h != "" {
		h, err := filepath.Abs(h)
		if err != nil {
			return Paths{}, err
		}
		return Paths{Config: filepath.Join(h, "config"), Data: filepath.Join(h, "data"), State: filepath.Join(h, "state")}, nil
	}
	home := get("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return Paths{}, fmt.Errorf("cannot find a home directory: set QKIT_HOME or HOME")
		}
	}
	xdg := func(name, fallback string) string {
		if v := get(name); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "qkit")
		}
		return filepath.Join(home, fallback, "qkit")
	}
	return Paths{
		Config: xdg("XDG_CONFIG_HOME", ".config"),
		Data:   xdg("XDG_DATA_HOME", filepath.Join(".local", "share")),
		State:  xdg("XDG_STATE_HOME", filepath.Join(".local", "state")),
	}, nil
}

// Load reads the configuration. A config file that exists but cannot be read or parsed is an error
// naming the file (and the line, for YAML syntax errors).
func Load(opts LoadOptions) (*Config, error) {
	env := opts.LookupEnv
	if env == nil {
		env = os.LookupEnv
	}
	paths, err := ResolvePaths(env)
	if err != nil {
		return nil, err
	}
	file := opts.File
	if file == "" {
		if f, ok := env("QKIT_CONFIG"); ok && f != "" {
			file = f
		} else {
			file = filepath.Join(paths.Config, "config.yaml")
		}
	}
	c := &Config{Paths: paths, File: file, values: map[string]Value{}, env: env}

	v := viper.New()
	v.SetConfigType("yaml")
	var data []byte
	err = fs.ErrNotExist
	if !opts.SkipFile {
		data, err = filestore.ReadState(file)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, filestore.ErrNotRegular) || errors.Is(err, filestore.ErrTooLarge):
		// A FIFO would hang every command, a link to /dev/zero run it out of memory.
		return nil, fmt.Errorf("config file %w (it was left as it is; qkit reads only a regular file)", err)
	case err != nil:
		return nil, fmt.Errorf("config file %s: cannot read: %w", file, unwrapPath(err))
	default:
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			fe := contentError(file, data, err)
			if !opts.KeepBroken {
				return nil, fe
			}
			c.Broken, v = fe, viper.New()
			break
		}
		for _, name := range v.AllKeys() {
			if _, ok := LookupKey(name); !ok && (v.Get(name) != nil || !isSection(name)) {
				c.Unknown = append(c.Unknown, UnknownKeyError(name))
			}
		}
		sort.Slice(c.Unknown, func(i, j int) bool { return c.Unknown[i] < c.Unknown[j] })
	}

	for _, k := range Keys {
		val := Value{Key: k, Raw: k.Default, Source: SourceDefault}
		if v.InConfig(k.Name) {
			val.Raw, val.Source, val.Origin, val.InFile = fileString(v.Get(k.Name)), SourceFile, file, true
		}
		if k.SeedEnv != "" {
			if raw, ok := env(k.SeedEnv); ok && raw != "" {
				val.Raw, val.Source, val.Origin = raw, SourceEnv, k.SeedEnv
			}
		}
		if raw, ok := env(k.EnvName()); ok && raw != "" {
			val.Raw, val.Source, val.Origin = raw, SourceEnv, k.EnvName()
		}
		if raw, ok := opts.Overrides[k.Name]; ok {
			val.Raw, val.Source, val.Origin = raw, SourceFlag, "--set"
		}
		parsed, err := k.Parse(val.Raw)
		if err != nil {
			c.Problems = append(c.Problems, &ValueError{Key: k.Name, Source: val.Source, Origin: val.Origin, Err: err})
			parsed, _ = k.Parse(k.Default)
			val = Value{Key: k, Raw: k.Default, Source: SourceDefault, InFile: val.InFile}
		}
		val.Parsed = parsed
		c.values[k.Name] = val
	}
	for name := range opts.Overrides {
		if _, ok := LookupKey(name); !ok {
			return nil, UnknownKeyError(name)
		}
	}
	return c, nil
}

// Reload reads the configuration again as c was read: the same file, environment and --set
// overrides. A server that runs for a long time calls it to see a setting changed since it started
// (internal.trusted, which `qkit settings reset` may have withdrawn). It fails as Load does.
func (c *Config) Reload() (*Config, error) {
	overrides := map[string]string{}
	for _, v := range c.values {
		if v.Source == SourceFlag {
			overrides[v.Key.Name] = v.Raw
		}
	}
	return Load(LoadOptions{File: c.File, Overrides: overrides, LookupEnv: c.env})
}

// fileString turns what viper decoded from YAML back into the text form settings are parsed from.
func fileString(x any) string {
	switch t := x.(type) {
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	}
	return fmt.Sprint(x)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func unwrapYAML(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "yaml: "); i >= 0 {
		return msg[i:]
	}
	return msg
}

// get returns a setting's value. It panics on a name that is not in Keys; only the typed handles
// (settings.go), each checked against Keys by TestSettingHandles, call it with a fixed name.
func (c *Config) get(name string) Value {
	v, ok := c.values[name]
	if !ok {
		panic("config: unknown key " + name)
	}
	return v
}

// Lookup returns the setting a user named (settings get, settings set), and false when no setting
// has that name. Code reads a setting through its handle instead (config.AgentTimeout.Get(c)).
func (c *Config) Lookup(name string) (Value, bool) {
	v, ok := c.values[name]
	return v, ok
}

// All returns every setting in the order of Keys.
func (c *Config) All() []Value {
	out := make([]Value, 0, len(Keys))
	for _, k := range Keys {
		out = append(out, c.values[k.Name])
	}
	return out
}

// ToolEnabled reports whether an optional MCP tool is enabled through tools.enabled or
// ENABLE_ADDITIONAL_TOOLS: entries are trimmed, lower-cased, "_" is read as "-", and "all" enables all.
func (c *Config) ToolEnabled(tool string) bool {
	want := NormalizeToolName(tool)
	for _, t := range ToolsEnabled.Get(c) {
		t = NormalizeToolName(t)
		if t == "all" || t == want {
			return true
		}
	}
	return false
}

// NormalizeToolName lower-cases a tool name and reads "_" as "-".
func NormalizeToolName(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}

// masked stands in for a secret value that is set.
const masked = "********"

// Display is the text `settings get` prints for a value.
func (v Value) Display() string {
	if v.Key.Secret && v.Raw != "" {
		return masked
	}
	switch p := v.Parsed.(type) {
	case []string:
		return strings.Join(p, ",")
	case time.Duration:
		return v.Raw
	case int64:
		if v.Key.Kind == Size {
			return strings.TrimSpace(v.Raw)
		}
		return strconv.FormatInt(p, 10)
	case bool:
		return strconv.FormatBool(p)
	}
	return fmt.Sprint(v.Parsed)
}

// JSONValue is the typed value for --json output: durations as text (FormatDuration), sizes and
// ints as numbers.
func (v Value) JSONValue() any {
	if v.Key.Secret && v.Raw != "" {
		return masked
	}
	switch p := v.Parsed.(type) {
	case time.Duration:
		return FormatDuration(p)
	case []string:
		if p == nil {
			return []string{}
		}
	}
	return v.Parsed
}

// JSONDefault is the key's default as JSONValue gives a value (a number for a size, "3m" for a
// duration of 180s), so a script can compare the two.
func (k Key) JSONDefault() any {
	p, err := k.Parse(k.Default)
	if err != nil {
		return k.Default // not reached: TestDefaults loads every default
	}
	return Value{Key: k, Raw: k.Default, Parsed: p, Source: SourceDefault}.JSONValue()
}

// FormatDuration writes d as time.Duration's String does, without its trailing zero units: 3m
// rather than 3m0s, 168h rather than 168h0m0s. time.ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ValueError is a value from the file, the environment or --set that did not parse: Key names
// the setting; Source and Origin say where it came from (the file's path, the variable's name, or "--set").
type ValueError struct {
	// Key is the setting's name.
	Key    string
	Source Source
	Origin string
	Err    error
}

func (e *ValueError) Error() string { return e.Origin + ": " + e.Err.Error() }

func (e *ValueError) Unwrap() error { return e.Err }

// Hint says how the user fixes the value where it came from.
func (e *ValueError) Hint() string {
	switch e.Source {
	case SourceFlag:
		return "correct the --set value"
	case SourceEnv:
		return "unset " + e.Origin + " or correct it"
	}
	return "fix it with qkit settings set"
}

// isSection reports whether name is the section of some setting (agent for agent.timeout): such a
// section left empty (`agent:` on its own line) holds no setting, so it is no unknown one.
func isSection(name string) bool {
	for _, k := range Keys {
		if strings.HasPrefix(k.Name, name+".") {
			return true
		}
	}
	return false
}

// UnknownKeyError names the key and suggests the nearest valid ones (exit 2 through the caller).
type UnknownKeyError string

func (e UnknownKeyError) Error() string {
	msg := fmt.Sprintf("unknown setting %q", string(e))
	if s := Suggest(string(e)); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return msg + " (qkit settings list shows them all)"
}

// Suggest returns up to three keys close to name: a shared suffix or prefix segment, or a small edit
// distance.
func Suggest(name string) []string {
	type cand struct {
		key  string
		dist int
	}
	var cands []cand
	lname := strings.ToLower(name)
	for _, k := range Keys {
		d := editDistance(lname, k.Name)
		last := k.Name[strings.LastIndex(k.Name, ".")+1:]
		if last == lname || strings.HasPrefix(k.Name, lname+".") || strings.Contains(k.Name, lname) && len(lname) >= 3 {
			d = 0
		}
		if d <= 3 || d*3 <= len(k.Name) {
			cands = append(cands, cand{k.Name, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].dist < cands[j].dist })
	var out []string
	for i := 0; i < len(cands) && i < 3; i++ {
		out = append(out, cands[i].key)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Set validates value for key and writes it to the config file atomically, under the file's lock.
// A file that does not parse is left untouched, and so is the file when ctx ends before the write
// (see filestore.UpdateContext).
func (c *Config) Set(ctx context.Context, name, raw string) error {
	k, ok := LookupKey(name)
	if !ok {
		return UnknownKeyError(name)
	}
	parsed, err := k.Parse(raw)
	if err != nil {
		return err
	}
	var stored any = strings.TrimSpace(raw)
	switch k.Kind {
	case Bool, Int, List:
		stored = parsed
	}
	return c.editFile(ctx, func(root *yaml.Node) (bool, error) {
		return true, setNode(root, name, stored)
	})
}

// Reset removes keys from the config file so their defaults (or environment) apply again. With no
// names it removes every known key.
func (c *Config) Reset(ctx context.Context, names ...string) error {
	for _, n := range names {
		if _, ok := LookupKey(n); !ok {
			return UnknownKeyError(n)
		}
	}
	if len(names) == 0 {
		for _, k := range Keys {
			names = append(names, k.Name)
		}
	}
	return c.editFile(ctx, func(root *yaml.Node) (bool, error) {
		changed := false
		for _, n := range names {
			changed = deleteNode(root, strings.Split(n, "."), nil) || changed
		}
		return changed, nil
	})
}
