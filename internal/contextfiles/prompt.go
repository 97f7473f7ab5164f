package contextfiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// The markers of the prompt block.
const (
	BlockBegin = "--- CONTEXT FILES BEGIN ---"
	BlockEnd   = "--- CONTEXT FILES END ---"
)

// Rule is one configured path or glob and how many files it matches here.
type Rule struct {
	Path    string `json:"path"`
	Matches int    `json:"matches"`
}

// File is one context file: absolute path, the list it came from, size and token estimate.
// Content is filled only when asked for (show --expand).
type File struct {
	Path    string  `json:"path"`
	Scope   string  `json:"scope"`
	Bytes   int64   `json:"bytes"`
	Tokens  int64   `json:"tokens"`
	Content *string `json:"content,omitempty"`
	// Relative is set when a relative rule matched the file: a person reads it relative to the
	// working directory; a file only an absolute or ~ rule matched is shown as it was named.
	Relative bool `json:"-"`
}

// Skipped is a path that is never sent, and why: a matched file that is binary or not UTF-8, or a
// link (to a file or a folder) out of the folder its rule must stay in.
type Skipped struct {
	Path   string `json:"path"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
	// Relative is as for File.
	Relative bool `json:"-"`
	// warned is set when Warnings already says it (links out are warned of as they are met).
	warned bool
}

// Rules are the configured rules of both lists.
type Rules struct {
	Global  []Rule `json:"global"`
	Profile []Rule `json:"profile"`
}

// Report is what `context show` prints: the rules with their match counts, the files in use with
// their estimates and total, what the budget drops and what is skipped.
type Report struct {
	Profile     string    `json:"profile"`
	MaxTokens   int64     `json:"max_tokens"`
	Rules       Rules     `json:"rules"`
	Files       []File    `json:"files"`
	TotalTokens int64     `json:"total_tokens"`
	Dropped     []File    `json:"dropped"`
	Skipped     []Skipped `json:"skipped"`
	// Warnings are problems met while expanding the rules (links out of a rule's folder, unreadable
	// folders, symlink loops, pseudo file systems, walks stopped by a limit), one line each, for
	// stderr, made Printable. Links out are listed in Skipped too; binary files and dropped files
	// only there.
	Warnings []string `json:"warnings"`
}

// ReportOptions control Collect.
type ReportOptions struct {
	// Expand fills each file's Content.
	Expand bool
}

// Collect resolves the global and profile rules against cwd and applies the budget of maxTokens
// (<= 0: none). An empty profile means the active one.
func (s *Store) Collect(profile, cwd string, maxTokens int64, opts ReportOptions) (*Report, error) {
	if profile == "" {
		var err error
		if profile, err = s.ResolveProfile(""); err != nil {
			return nil, err
		}
	}
	if err := s.requireProfile(profile); err != nil {
		return nil, err
	}
	global, err := readConfig(s.globalPath())
	if err != nil {
		return nil, err
	}
	prof, err := readConfig(s.profilePath(profile))
	if err != nil {
		return nil, err
	}
	var refs []ruleRef
	for _, p := range global.Paths {
		refs = append(refs, ruleRef{scope: ScopeGlobal, text: p})
	}
	for _, p := range prof.Paths {
		refs = append(refs, ruleRef{scope: ScopeProfile, text: p})
	}
	ex := s.expand(refs, cwd)
	rep := &Report{
		Profile: profile, MaxTokens: maxTokens,
		Rules: Rules{Global: []Rule{}, Profile: []Rule{}},
		Files: []File{}, Dropped: []File{}, Skipped: []Skipped{},
		Warnings: printableAll(ex.warnings),
	}
	for _, stray := range [][]string{global.strayRules(s.globalPath()), prof.strayRules(s.profilePath(profile))} {
		rep.Warnings = append(rep.Warnings, printableAll(stray)...)
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	for _, sk := range ex.skipped {
		rep.Skipped = append(rep.Skipped, Skipped{Path: sk.path, Scope: sk.scope, Reason: sk.reason, Relative: sk.relative, warned: true})
	}
	for i, r := range refs {
		if r.scope == ScopeGlobal {
			rep.Rules.Global = append(rep.Rules.Global, Rule{Path: r.text, Matches: ex.counts[i]})
		} else {
			rep.Rules.Profile = append(rep.Rules.Profile, Rule{Path: r.text, Matches: ex.counts[i]})
		}
	}
	buf := make([]byte, 64<<10)
	var candidates []File
	for _, f := range ex.files {
		// A file larger than the whole budget is dropped whatever else it holds, so only its first
		// block is read (to tell binary files apart): a rule that matches a multi-gigabyte file
		// must not read it on every prompt.
		limit := int64(-1)
		if maxTokens > 0 {
			limit = 4 * maxTokens
		}
		size, err := checkText(f.path, buf, limit)
		switch {
		case errors.Is(err, errNotText):
			rep.Skipped = append(rep.Skipped, Skipped{Path: f.path, Scope: f.scope, Reason: err.Error(), Relative: f.relative})
		case errors.Is(err, fs.ErrNotExist):
			// vanished since the walk: skipped like any missing path
		case err != nil:
			rep.Skipped = append(rep.Skipped, Skipped{Path: f.path, Scope: f.scope, Reason: unwrapPath(err).Error(), Relative: f.relative})
		default:
			candidates = append(candidates, File{Path: f.path, Scope: f.scope, Bytes: size, Tokens: EstimateTokens(fileBytes(f.path, size)), Relative: f.relative})
		}
	}
	sort.SliceStable(rep.Skipped, func(i, j int) bool { return rep.Skipped[i].Path < rep.Skipped[j].Path })
	kept, dropped := applyBudget(candidates, maxTokens)
	if len(dropped) > 0 {
		rep.Dropped = dropped
	}
	rep.TotalTokens = blockTokens(kept)
	for _, f := range kept {
		if opts.Expand {
			data, err := readInto(f.Path, nil)
			if err != nil {
				rep.Warnings = append(rep.Warnings, Printable(fmt.Sprintf("skipping %s: %v", f.Path, unwrapPath(err))))
				continue
			}
			content := string(data)
			f.Content = &content
		}
		rep.Files = append(rep.Files, f)
	}
	return rep, nil
}

// Prompt returns the prompt to send for userPrompt under profile, run from cwd: the context block
// (the exact "--- CONTEXT FILES BEGIN ---" block) followed by a blank line and userPrompt, or
// just userPrompt when no file matches. Files over the budget of maxTokens are dropped largest first;
// binary and non-UTF-8 files are skipped; each such event is one line of warnings, for the caller to
// print to stderr. An empty profile means the active one; an empty cwd, the process's.
func (s *Store) Prompt(profile, cwd string, maxTokens int64, userPrompt string) (string, []string, error) {
	rep, err := s.Collect(profile, cwd, maxTokens, ReportOptions{})
	if err != nil {
		return "", nil, err
	}
	warnings := rep.Warnings
	for _, sk := range rep.Skipped {
		if !sk.warned {
			warnings = append(warnings, Printable(fmt.Sprintf("skipping %s: %s", sk.Path, sk.Reason)))
		}
	}
	if len(rep.Dropped) > 0 {
		warnings = append(warnings, Printable(droppedWarning(rep.Dropped, maxTokens)))
	}
	if len(rep.Files) == 0 {
		return userPrompt, warnings, nil
	}
	var total int64
	for _, f := range rep.Files {
		total += fileBytes(f.Path, f.Bytes)
	}
	var b strings.Builder
	b.Grow(int(total) + len(BlockBegin) + len(BlockEnd) + len(userPrompt) + 4)
	b.WriteString(BlockBegin + "\n")
	var buf []byte
	n := 0
	for _, f := range rep.Files {
		data, err := readInto(f.Path, buf)
		buf = data[:0]
		if err != nil {
			warnings = append(warnings, Printable(fmt.Sprintf("skipping %s: %v", f.Path, unwrapPath(err))))
			continue
		}
		if !isText(data) {
			warnings = append(warnings, Printable(fmt.Sprintf("skipping %s: %v", f.Path, errNotText)))
			continue
		}
		if int64(len(data)) > f.Bytes {
			// It grew since Collect measured it: sent whole it could take the block past the budget.
			warnings = append(warnings, Printable(fmt.Sprintf("skipping %s: it grew while the prompt was built", f.Path)))
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		n++
		b.WriteString(fileHeader(f.Path))
		b.Write(data)
		if len(data) == 0 || data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	if n == 0 {
		return userPrompt, warnings, nil
	}
	b.WriteString(BlockEnd + "\n\n")
	b.WriteString(userPrompt)
	return b.String(), warnings, nil
}

// fileHeader is the line that names a file in the block: "[path]", the path on one line with
// every control, bidi and invalid byte shown as a visible escape (Printable). A file name comes
// from the repository, and one holding a line break could otherwise forge the block's markers or a
// header of its own for the agent; an escape sequence would act on the terminal of whoever reads
// the prompt. It is built here, once, for every door (ask, the MCP tool, ACP sessions, context
// prompt), and fileBytes counts it as written here.
func fileHeader(path string) string { return "[" + Printable(path) + "]\n" }

// readInto reads the whole regular file at path into buf (grown as needed) and returns the filled slice.
func readInto(path string, buf []byte) ([]byte, error) {
	f, err := filestore.OpenRegular(path)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	buf = buf[:0]
	if fi, err := f.Stat(); err == nil && int64(cap(buf)) < fi.Size()+1 {
		buf = make([]byte, 0, fi.Size()+512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf[:0], err
		}
	}
}
