package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// Kind is the type of a setting's value; it decides how a value is parsed and validated.
type Kind int

// The kinds of setting.
const (
	String Kind = iota
	Bool
	Int
	Duration
	Size
	List
)

func (k Kind) String() string {
	return [...]string{"string", "bool", "integer", "duration", "size", "list"}[k]
}

// Key describes one setting.
type Key struct {
	Name    string
	Kind    Kind
	Default string
	Help    string
	// SeedEnv is the environment variable Q's earlier tools read for this key, which also sets it
	// (AGENT_TIMEOUT and friends). It wins over the file and loses to QKIT_* and flags.
	SeedEnv string
	// Values, when set, are the only values accepted (a String key); shells complete them.
	Values []string
	// Check validates a parsed value beyond its kind; nil means any value of the kind is fine.
	Check func(v any) error
	// Secret values (tokens) are never printed: settings list and get show them as ********.
	Secret bool
	// File values name a file qkit reads (credentials, certificates): shells complete file names,
	// and `settings set` warns when the file is not there.
	File bool
}

// EnvName is the QKIT_* variable for the key: dots become underscores, upper-cased.
func (k Key) EnvName() string {
	// (Every setting's name is read on each start: no Replacer built per call.)
	return "QKIT_" + strings.Map(func(r rune) rune {
		if r == '.' || r == '-' {
			return '_'
		}
		return unicode.ToUpper(r)
	}, k.Name)
}

// Keys lists every setting qkit reads, in the order `qkit settings list` shows them.
var Keys = []Key{
	{Name: "agent.command", Kind: String, Default: "q", Help: "the agent to run: q or kiro-cli (a name on PATH or a path), or any ACP agent's command line with its arguments (goose acp, npx @zed-industries/claude-code-acp), run on the acp backend as given", Check: nonEmpty},
	{Name: "agent.timeout", Kind: Duration, Default: "180s", Help: "time limit per agent run; partial output is returned on timeout", SeedEnv: "AGENT_TIMEOUT", Check: durationRange(time.Second, 24*time.Hour)},
	{Name: "agent.max_response_size", Kind: Size, Default: "2MB", Help: "agent output kept per run; the rest is cut at a line break", SeedEnv: "AGENT_MAX_RESPONSE_SIZE", Check: sizeRange(1, 1<<30)},
	{Name: "agent.model", Kind: String, Default: "", Help: "model passed as --model when set"},
	{Name: "agent.models", Kind: List, Default: "", Help: "models accepted by --model and override-model; empty: any model, checked against the agent's own list when it has one (kiro-cli chat --list-models)"},
	{Name: "agent.strip_ansi", Kind: Bool, Default: "true", Help: "remove escape sequences and control characters (C0 but newline and tab, C1, bidi) from the agent's reply on both backends; only agent.raw_output=true with this false keeps the raw text"},
	{Name: "agent.raw_output", Kind: Bool, Default: "false", Help: "return the agent's stdout as printed, with its \"> \" prefix, tool banners and their descriptions (default: the reply only); with agent.strip_ansi=false also unfiltered, on both backends"},
	{Name: "agent.backend", Kind: String, Default: "auto", Help: "how qkit ask drives the agent: acp (<agent.command> acp, typed events and permissions), chat (chat --no-interactive, scraped text), auto (acp when the agent answers initialize, learned per agent binary; a learned no-ACP is kept an hour, a failed acp start probes again)", Values: []string{"auto", "acp", "chat"}},
	{Name: "tools.enabled", Kind: List, Default: "", Help: "optional MCP tools to enable (q-developer-agent, or all)", SeedEnv: "ENABLE_ADDITIONAL_TOOLS"},
	{Name: "questions.timeout", Kind: Duration, Default: "30m", Help: "how long ask_user_questions waits for an answer (0 = until answered or cancelled)", Check: durationRange(0, 30*24*time.Hour)},
	{Name: "questions.retention", Kind: Duration, Default: "168h", Help: "finished question sessions older than this are removed", Check: durationRange(time.Minute, 10*365*24*time.Hour)},
	{Name: "questions.progress_interval", Kind: Duration, Default: "5s", Help: "how often a waiting ask_user_questions sends a progress notification (0 = only the first, when the set is stored)", Check: durationRange(0, time.Hour)},
	{Name: "questions.via", Kind: String, Default: "auto", Help: "how ask_user_questions reaches the person: auto (also the client's own form when it has elicitation), elicitation (require the client's form), store (only qkit questions and the web page)", Values: []string{"auto", "elicitation", "store"}},
	{Name: "questions.store", Kind: String, Default: "file", Help: "where question sets wait: file (the state folder) or nats (a JetStream bucket other machines share)", Values: []string{"file", "nats"}},
	{Name: "questions.installation", Kind: String, Default: "default", Help: "name shared by the qkit installations that answer each other's questions (NATS bucket qkit-questions-NAME)", Check: bucketName},
	{Name: "questions.nats_url", Kind: String, Default: "nats://127.0.0.1:4222", Help: "NATS server for questions.store=nats (comma-separated for a cluster)", Check: nonEmpty},
	{Name: "questions.nats_creds", Kind: String, Default: "", Help: "NATS credentials file (JWT and NKey seed)", File: true},
	{Name: "questions.nats_token", Kind: String, Default: "", Help: "NATS authentication token, shown as ******** (prefer QKIT_QUESTIONS_NATS_TOKEN to the config file)", Secret: true},
	{Name: "questions.nats_tls_cert", Kind: String, Default: "", Help: "client certificate file for NATS over TLS (with questions.nats_tls_key)", File: true},
	{Name: "questions.nats_tls_key", Kind: String, Default: "", Help: "client key file for NATS over TLS", File: true},
	{Name: "questions.nats_tls_ca", Kind: String, Default: "", Help: "CA file that signs the NATS server's certificate", File: true},
	{Name: "acp.enabled", Kind: Bool, Default: "false", Help: "allow `qkit acp serve` (feature gate)"},
	{Name: "context.max_tokens", Kind: Int, Default: "150000", Help: "token budget for context files (bytes/4 estimate)", Check: intRange(1, 100_000_000)},
	{Name: "context.walk_max_files", Kind: Int, Default: "200000", Help: "files and folders one walk of a glob rule may look at; a walk that reaches it stops and its rules take no file (0 = no limit)", Check: intRange(0, 1_000_000_000)},
	{Name: "context.walk_timeout", Kind: Duration, Default: "10s", Help: "time one walk of a glob rule may take; a walk that reaches it stops and its rules take no file (0 = no limit)", Check: durationRange(0, 24*time.Hour)},
	{Name: "internal.trusted", Kind: List, Default: "", Help: "internal commands that change state but need no confirmation (e.g. \"context add\")"},
	{Name: "log.level", Kind: String, Default: "warn", Help: "log level on stderr: debug, info, warn or error", Values: []string{"debug", "info", "warn", "error"}},
}

// LookupKey finds a key by name.
func LookupKey(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// Parse turns raw text into the key's typed value, or says what was expected.
func (k Key) Parse(raw string) (any, error) {
	v, err := parseKind(k.Kind, raw)
	if err != nil {
		if abs, ok := strings.CutPrefix(strings.TrimSpace(raw), "-"); ok && (k.Kind == Duration || k.Kind == Size) {
			if _, err := parseKind(k.Kind, abs); err == nil {
				return nil, fmt.Errorf("invalid value %q for %s: a %s cannot be negative; expected %s", raw, k.Name, k.Kind, k.expected())
			}
		}
		return nil, fmt.Errorf("invalid value %q for %s: expected %s", raw, k.Name, k.expected())
	}
	if len(k.Values) > 0 && !slices.Contains(k.Values, v.(string)) {
		msg := fmt.Sprintf("invalid value %q for %s: expected one of %s", raw, k.Name, strings.Join(k.Values, ", "))
		if near := closestValue(k.Values, v.(string)); near != "" {
			msg += "; did you mean " + near + "?"
		}
		return nil, errors.New(msg)
	}
	if k.Check != nil {
		if err := k.Check(v); err != nil {
			return nil, fmt.Errorf("invalid value %q for %s: %v", raw, k.Name, err)
		}
	}
	return v, nil
}

// closestValue is the one value of values within two edits of s (ignoring case), or "" when none
// or several are that close.
func closestValue(values []string, s string) string {
	s = strings.ToLower(s)
	near := ""
	for _, v := range values {
		if editDistance(s, strings.ToLower(v)) <= 2 {
			if near != "" {
				return ""
			}
			near = v
		}
	}
	return near
}

// FileProblem says what is wrong with a File key's value on this machine (the file is missing, is a
// directory or is not a regular file), or "" when it names a readable file or the key takes no file.
// It never blocks: a FIFO or a device is named, not opened for reading. For `settings set` it is a
// warning (the file may be put there later); the NATS store refuses to connect on it.
func (k Key) FileProblem(value string) string {
	if !k.File || value == "" {
		return ""
	}
	f, err := filestore.OpenRegular(value)
	switch {
	case errors.Is(err, filestore.ErrNotRegular):
		if info, serr := os.Stat(value); serr == nil && info.IsDir() {
			return fmt.Sprintf("%s: %s is a directory, not a file", k.Name, value)
		}
		return fmt.Sprintf("%s: %s is not a regular file", k.Name, value)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Sprintf("%s: cannot read %s: %v", k.Name, value, err)
	}
	_ = f.Close()
	return ""
}

// Choices are the values shells offer for the key: its Values, or true and false for a Bool.
func (k Key) Choices() []string {
	if k.Kind == Bool {
		return []string{"true", "false"}
	}
	return k.Values
}

func (k Key) expected() string {
	switch k.Kind {
	case Bool:
		return "true or false"
	case Int:
		return "a whole number"
	case Duration:
		return "a duration such as 90s, 3m or 1h30m (a plain number is seconds)"
	case Size:
		return "a size such as 2MB, 512KiB or a plain number of bytes"
	case List:
		return "a comma-separated list"
	}
	return "text"
}

func parseKind(kind Kind, raw string) (any, error) {
	raw = strings.TrimSpace(raw)
	switch kind {
	case Bool:
		return strconv.ParseBool(raw)
	case Int:
		return strconv.ParseInt(raw, 10, 64)
	case Duration:
		return ParseDuration(raw)
	case Size:
		return ParseSize(raw)
	case List:
		return ParseList(raw), nil
	}
	return raw, nil
}

// ParseDuration accepts Go durations (90s, 3m, 1h30m) and plain numbers of seconds
// (AGENT_TIMEOUT is in seconds). Negative values are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(n) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if n > float64(1<<62)/float64(time.Second) {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		d = time.Duration(n * float64(time.Second))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, err
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// ParseSize accepts a number of bytes or a number with a unit: KB, MB, GB and KiB, MiB, GiB are all
// binary (2MB is 2,097,152 bytes, as in Q's earlier MCP server).
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(n) || n < 0 || n*float64(mult) > float64(1<<62) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return int64(n * float64(mult)), nil
}

// FormatSize prints a byte count the way sizes are written in settings (2MB, 512KiB, 1000).
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// ParseList splits a comma-separated list, trimming entries and dropping empty ones.
func ParseList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func nonEmpty(v any) error {
	if strings.TrimSpace(v.(string)) == "" {
		return fmt.Errorf("must not be empty")
	}
	return nil
}

// bucketName accepts what can follow "qkit-questions-" in a NATS bucket name.
func bucketName(v any) error {
	s := v.(string)
	if s == "" || len(s) > 64 {
		return fmt.Errorf("expected 1 to 64 letters, digits, '-' or '_'")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("expected 1 to 64 letters, digits, '-' or '_', not %q", r)
		}
	}
	return nil
}

func durationRange(lo, hi time.Duration) func(any) error {
	return func(v any) error {
		d := v.(time.Duration)
		if d < lo || d > hi {
			return fmt.Errorf("expected a duration between %v and %v", lo, hi)
		}
		return nil
	}
}

func sizeRange(lo, hi int64) func(any) error {
	return func(v any) error {
		n := v.(int64)
		if n < lo || n > hi {
			return fmt.Errorf("expected a size between %s and %s", FormatSize(lo), FormatSize(hi))
		}
		return nil
	}
}

func intRange(lo, hi int64) func(any) error {
	return func(v any) error {
		n := v.(int64)
		if n < lo || n > hi {
			return fmt.Errorf("expected a number between %d and %d", lo, hi)
		}
		return nil
	}
}
