// Package contextfiles is qkit's context manager: the global and per-profile lists of paths and globs
// that are sent with every prompt, the active profile, the expansion of those rules into files, the
// token budget and the exact prompt block. Every front end (the context commands, ask, ACP sessions)
// goes through a Store; nothing here knows about cobra or a protocol.
//
// On disk, under <config>/context/: global.json and profiles/<name>.json, each {"paths": [...]}, and
// the file "active" holding the active profile's name (absent means "default"). Every
// read-modify-write holds the file's advisory lock (internal/filestore), so concurrent processes lose
// nothing.
package contextfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/output"
)

const (
	filePerm = 0o644
	dirPerm  = 0o755
)

// Store reads and writes the context configuration under one configuration directory. It holds no
// state of its own: every call reads the files, so separate processes see each other's changes.
type Store struct {
	dir string // <config>/context
	// home is the home directory used for "~" in rules; empty means os.UserHomeDir.
	home string
	// limits bound each walk; nil means DefaultWalkLimits.
	limits *WalkLimits
	// now is the walks' clock; nil means time.Now (tests step it to reach the time limit).
	now func() time.Time
}

// NewStore returns the store for configDir (app.Config.Paths.Config); files live under
// <configDir>/context/.
func NewStore(configDir string) *Store {
	return &Store{dir: filepath.Join(configDir, "context")}
}

// WithHome returns a copy of s that expands "~" to home instead of the user's home directory.
func (s *Store) WithHome(home string) *Store {
	c := *s
	c.home = home
	return &c
}

// WithWalkLimits returns a copy of s whose walks stop at l (the settings context.walk_max_files and
// context.walk_timeout).
func (s *Store) WithWalkLimits(l WalkLimits) *Store {
	c := *s
	c.limits = &l
	return &c
}

func (s *Store) walkLimits() WalkLimits {
	if s.limits == nil {
		return DefaultWalkLimits
	}
	return *s.limits
}

// Dir is the directory holding the context configuration.
func (s *Store) Dir() string { return s.dir }

func (s *Store) globalPath() string             { return filepath.Join(s.dir, "global.json") }
func (s *Store) profilesDir() string            { return filepath.Join(s.dir, "profiles") }
func (s *Store) activePath() string             { return filepath.Join(s.dir, "active") }
func (s *Store) profilePath(name string) string { return filepath.Join(s.profilesDir(), name+".json") }
func (s *Store) profilesLockPath() string       { return filepath.Join(s.dir, "profiles") }
func (s *Store) configPath(t Target) string {
	if t.Global {
		return s.globalPath()
	}
	return s.profilePath(t.Profile)
}

// Target names one list of rules: the global one, or a profile's.
type Target struct {
	Global  bool
	Profile string
}

// Scope names the list in messages: "global" or "profile".
func (t Target) Scope() string {
	if t.Global {
		return ScopeGlobal
	}
	return ScopeProfile
}

// The two scopes a rule or a file comes from.
const (
	ScopeGlobal  = "global"
	ScopeProfile = "profile"
)

// fileConfig is the on-disk form of global.json and profiles/<name>.json: {"paths": [...]}. Other
// fields (a "hooks" key another tool wrote) are kept, in their order, through every rewrite.
type fileConfig struct {
	Paths []string
	// fields are the file's top-level fields in order, "paths" among them, as read.
	fields []jsonField
}

// strayRules names the fields of c, read from path, that hold a list of rules although the file
// has no "paths": a misspelled key ("pathz", "path") whose rules would silently not apply. Other
// fields (Q's hooks, an object) are kept as they are and not reported.
func (c fileConfig) strayRules(path string) []string {
	if slices.ContainsFunc(c.fields, func(f jsonField) bool { return f.name == "paths" }) {
		return nil
	}
	var out []string
	for _, f := range c.fields {
		var rules []string
		if json.Unmarshal(f.value, &rules) == nil && len(rules) > 0 {
			out = append(out, fmt.Sprintf("%s: %q holds a list of rules but is not \"paths\", so they are not used; rename it to \"paths\"", path, f.name))
		}
	}
	return out
}

// jsonField is one top-level field of a context file, its value as written.
type jsonField struct {
	name  string
	value json.RawMessage
}

// CorruptError reports a config file that is not valid JSON of the expected shape. The file is left
// untouched.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt context config %s: %v (fix or remove the file; it was left untouched)", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func parseConfig(path string, data []byte) (fileConfig, error) {
	var c fileConfig
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	corrupt := func(err error) (fileConfig, error) { return fileConfig{}, &CorruptError{Path: path, Err: err} }
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return corrupt(err)
	}
	if tok != json.Delim('{') {
		return corrupt(fmt.Errorf("the file holds %s, not a JSON object", describeToken(tok)))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return corrupt(err)
		}
		name, _ := tok.(string)
		if strings.EqualFold(name, "paths") {
			name = "paths" // encoding/json matches field names ignoring case
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return corrupt(err)
		}
		if name == "paths" {
			var paths []string
			if err := json.Unmarshal(value, &paths); err != nil {
				return corrupt(fmt.Errorf(`"paths" must be a list of strings: %w`, err))
			}
			c.Paths = paths
		}
		if i := slices.IndexFunc(c.fields, func(f jsonField) bool { return f.name == name }); i >= 0 {
			c.fields[i].value = value // a repeated key: the last one counts, as for encoding/json
			continue
		}
		c.fields = append(c.fields, jsonField{name: name, value: value})
	}
	if _, err := dec.Token(); err != nil {
		return corrupt(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return corrupt(errors.New("trailing data after the JSON object"))
	}
	return c, nil
}

func describeToken(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "a list"
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// encodeConfig writes c: its fields in their order with "paths" holding c.Paths (first when the
// file had none), two-space indented.
func encodeConfig(c fileConfig) []byte {
	if c.Paths == nil {
		c.Paths = []string{}
	}
	paths, _ := json.MarshalIndent(c.Paths, "  ", "  ")
	fields := c.fields
	hasPaths := false
	for _, f := range fields {
		hasPaths = hasPaths || f.name == "paths"
	}
	if !hasPaths {
		fields = append([]jsonField{{name: "paths"}}, fields...)
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, f := range fields {
		value := []byte(f.value)
		if f.name == "paths" {
			value = paths
		} else {
			var ind bytes.Buffer
			if err := json.Indent(&ind, f.value, "  ", "  "); err == nil {
				value = ind.Bytes()
			}
		}
		if i > 0 {
			b.WriteString(",")
		}
		name, _ := json.Marshal(f.name)
		b.WriteString("\n  ")
		b.Write(name)
		b.WriteString(": ")
		b.Write(value)
	}
	b.WriteString("\n}\n")
	return b.Bytes()
}

// readConfig reads one config; a missing file is an empty list. A FIFO, a device or a file over
// filestore.MaxStateSize is refused (see refused), never read.
func readConfig(path string) (fileConfig, error) {
	data, err := filestore.ReadState(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileConfig{}, nil
	}
	if err != nil && refused(err) == err {
		return fileConfig{}, fmt.Errorf("read %s: %w", path, err)
	}
	if err != nil {
		return fileConfig{}, refused(err)
	}
	return parseConfig(path, data)
}

// refused words filestore.ReadState's refusal of a context config (a FIFO hung `context show`, and
// `context clear` past any signal but SIGKILL); other errors pass as they are.
func refused(err error) error {
	if errors.Is(err, filestore.ErrNotRegular) || errors.Is(err, filestore.ErrTooLarge) {
		return fmt.Errorf("context config %w (fix or remove it; it was left untouched)", err)
	}
	return err
}

// Rules returns the rules (paths and globs, as the user gave them) of t. A profile other than
// "default" must exist.
func (s *Store) Rules(t Target) ([]string, error) {
	if !t.Global {
		if err := s.requireProfile(t.Profile); err != nil {
			return nil, err
		}
	}
	c, err := readConfig(s.configPath(t))
	return c.Paths, err
}

// update runs fn on t's rules under the file's lock and writes the result atomically. When ctx ends
// first (a signal while it waits for the lock), nothing is written (filestore.UpdateContext).
func (s *Store) update(ctx context.Context, t Target, fn func(paths []string) ([]string, error)) error {
	path := s.configPath(t)
	err := filestore.UpdateContext(ctx, path, filePerm, dirPerm, func(old []byte) ([]byte, error) {
		if !t.Global && old == nil && t.Profile != DefaultProfile {
			return nil, profileNotFound(t.Profile)
		}
		c, err := parseConfig(path, old)
		if err != nil {
			return nil, err
		}
		paths, err := fn(c.Paths)
		if err != nil {
			return nil, err
		}
		c.Paths = paths
		return encodeConfig(c), nil
	})
	return refused(err)
}

// AddOptions control Add.
type AddOptions struct {
	// Cwd resolves relative paths for validation (they are stored as given).
	Cwd string
	// Force adds paths that do not exist, globs that match nothing, and relative paths that lead
	// out of the working directory.
	Force bool
	// Warn, when set, is told of a path that is added but whose content is never sent (a binary or
	// non-UTF-8 file), one line each.
	Warn func(msg string)
}

// Add appends paths to t. Every path is checked before anything is written: a path that does not
// exist or a glob that matches nothing is refused unless opts.Force, a malformed glob always, and a
// path already in t is refused. Repeated arguments are added once. It returns the paths added.
func (s *Store) Add(ctx context.Context, t Target, paths []string, opts AddOptions) ([]string, error) {
	if len(paths) == 0 {
		return nil, output.UsageErrorf("No paths specified for qkit context add")
	}
	if !t.Global {
		if err := s.requireProfile(t.Profile); err != nil {
			return nil, err
		}
	}
	var add []string
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := s.validate(p, opts); err != nil {
			return nil, err
		}
		add = append(add, p)
	}
	err := s.update(ctx, t, func(cur []string) ([]string, error) {
		for _, p := range add {
			for _, c := range cur {
				if c == p {
					return nil, output.Errorf(output.ExitFailure, "Path '%s' already exists in the context", p)
				}
			}
		}
		return append(cur, add...), nil
	})
	if err != nil {
		return nil, err
	}
	return add, nil
}

// validate checks one path for Add.
func (s *Store) validate(p string, opts AddOptions) error {
	r, err := s.resolve(p, opts.Cwd)
	if err != nil {
		return output.UsageErrorf("Invalid path '%s': %s. Use --force to add anyway.", Printable(p), Printable(err.Error()))
	}
	if r.glob && !validPattern(r.pattern) {
		return output.UsageErrorf("Invalid path '%s': Invalid glob pattern '%s'", Printable(p), Printable(r.full))
	}
	if !r.glob {
		// Only files and folders are context; a FIFO or a device would block or flood every read.
		if fi, err := os.Stat(r.full); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return output.UsageErrorf("Invalid path '%s': '%s' is not a regular file or a folder", Printable(p), Printable(r.full))
		}
	}
	if !opts.Force {
		if err := s.validateExists(p, r); err != nil {
			return err
		}
	}
	if !r.glob && opts.Warn != nil {
		if fi, err := os.Stat(r.full); err == nil && fi.Mode().IsRegular() {
			if _, err := checkText(r.full, make([]byte, 64<<10), 64<<10); errors.Is(err, errNotText) {
				opts.Warn(Printable(fmt.Sprintf("%s is %v, so its content is never sent; it was added anyway (qkit context rm %s takes it out)", p, errNotText, p)))
			}
		}
	}
	return nil
}

// validateExists refuses a path that is never read from here: one that leads out of the working
// directory through a link, a missing one, or a glob that matches nothing. Every name in its
// messages (the rule, which a shell may have expanded from the repository's file names, a link's
// target, the notes of a walk) is Printable: on one line, nothing a terminal would act on.
func (s *Store) validateExists(p string, r resolved) error {
	dir := r.base
	if !r.glob {
		dir = r.full
	}
	if real, out := r.linkedOut(dir); out {
		return output.UsageErrorf("Invalid path '%s': %s links to %s, outside %s, so it is never read from here. Use --force to add anyway.",
			Printable(p), Printable(dir), Printable(real), Printable(r.anchor))
	}
	if r.glob {
		found, notes := s.globHasMatch(r)
		if !found {
			why := ""
			if len(notes) > 0 {
				why = " (" + strings.Join(printableAll(notes), "; ") + ")"
			}
			return output.NotFoundf("Invalid path '%s': No files found matching glob pattern '%s'%s. Use --force to add anyway.", Printable(p), Printable(r.full), why)
		}
		return nil
	}
	if _, err := os.Stat(r.full); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return output.NotFoundf("Invalid path '%s': Path '%s' does not exist. Use --force to add anyway.", Printable(p), Printable(r.full))
		}
		return output.Errorf(output.ExitFailure, "Invalid path '%s': %s. Use --force to add anyway.", Printable(p), Printable(err.Error()))
	}
	return nil
}

// Remove deletes paths (compared as stored) from t. It returns the paths removed and those that were
// not there; none found is an error.
func (s *Store) Remove(ctx context.Context, t Target, paths []string) (removed, missing []string, err error) {
	if len(paths) == 0 {
		return nil, nil, output.UsageErrorf("No paths specified for qkit context rm")
	}
	if !t.Global {
		if err := s.requireProfile(t.Profile); err != nil {
			return nil, nil, err
		}
	}
	err = s.update(ctx, t, func(cur []string) ([]string, error) {
		removed, missing = nil, nil
		drop := map[string]bool{}
		for _, p := range paths {
			found := false
			for _, c := range cur {
				if c == p {
					found = true
				}
			}
			if found && !drop[p] {
				removed = append(removed, p)
			} else if !found {
				missing = append(missing, p)
			}
			drop[p] = drop[p] || found
		}
		if len(removed) == 0 {
			return nil, output.NotFoundf("None of the specified paths were found in the context")
		}
		keep := cur[:0:0]
		for _, c := range cur {
			if !drop[c] {
				keep = append(keep, c)
			}
		}
		return keep, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return removed, missing, nil
}

// Clear empties t and returns how many rules it held. Add, Remove and Clear write nothing once ctx
// has ended, even when it ends while they wait for another process's lock.
func (s *Store) Clear(ctx context.Context, t Target) (int, error) {
	if !t.Global {
		if err := s.requireProfile(t.Profile); err != nil {
			return 0, err
		}
	}
	n := 0
	err := s.update(ctx, t, func(cur []string) ([]string, error) {
		n = len(cur)
		if n == 0 {
			return nil, filestore.ErrNoChange
		}
		return []string{}, nil
	})
	return n, err
}
