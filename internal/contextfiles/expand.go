package contextfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ruleRef is one configured rule and the list it came from.
type ruleRef struct {
	scope string
	text  string
}

// fileRef is one file a rule matched: its absolute path and the scope of the first rule (global
// before profile) that matched it.
type fileRef struct {
	path  string
	scope string
}

// expansion is what a set of rules resolves to.
type expansion struct {
	counts   []int     // files matched per rule
	files    []fileRef // sorted by path, each once
	warnings []string
}

// expand resolves rules against cwd. A relative glob or folder rule whose base folder is a link out
// of cwd (or of the folder its leading ".." climb to) takes nothing, with a warning; an absolute or ~
// rule's base is taken as given; either way no link out of the base is followed. Every glob base is walked once: globs sharing a base, or whose
// base lies inside another glob's base, are matched in the same walk. Missing paths and globs that
// match nothing contribute no files; unreadable folders and symlink loops become warnings.
func (s *Store) expand(rules []ruleRef, cwd string) expansion {
	ex := expansion{counts: make([]int, len(rules))}
	matched := make([][]string, len(rules))
	var globs []resolved
	var globRule []int
	for i, rule := range rules {
		r, err := s.resolve(rule.text, cwd)
		if err != nil {
			ex.warnings = append(ex.warnings, fmt.Sprintf("skipping %s: %v", rule.text, err))
			continue
		}
		if r.glob {
			if !validPattern(r.pattern) {
				ex.warnings = append(ex.warnings, fmt.Sprintf("skipping %s: invalid glob pattern", rule.text))
				continue
			}
			if real, out := r.linkedOut(r.base); out {
				ex.warnings = append(ex.warnings, outsideWarning(r.base, real, r.anchor))
				continue
			}
			globs = append(globs, r)
			globRule = append(globRule, i)
			continue
		}
		if fi, err := os.Stat(r.full); err == nil && fi.IsDir() {
			if real, out := r.linkedOut(r.full); out {
				ex.warnings = append(ex.warnings, outsideWarning(r.full, real, r.anchor))
				continue
			}
		}
		var warnings []string
		matched[i], warnings = plainPath(r.full)
		ex.warnings = append(ex.warnings, warnings...)
	}
	w := walker{
		onMatch: func(rule int, path string) { matched[rule] = append(matched[rule], path) },
		warn:    func(msg string) { ex.warnings = append(ex.warnings, msg) },
	}
	for _, g := range groupGlobs(globs, globRule) {
		w.walkGroup(g)
	}
	ex.warnings = uniq(ex.warnings)

	scopeOf := map[string]string{}
	for i, paths := range matched {
		ex.counts[i] = len(uniq(paths))
		for _, p := range paths {
			if _, ok := scopeOf[p]; !ok || rules[i].scope == ScopeGlobal {
				scopeOf[p] = rules[i].scope
			}
		}
	}
	ex.files = make([]fileRef, 0, len(scopeOf))
	for p, sc := range scopeOf {
		ex.files = append(ex.files, fileRef{path: p, scope: sc})
	}
	sort.Slice(ex.files, func(i, j int) bool { return ex.files[i].path < ex.files[j].path })
	return ex
}

// plainPath expands a rule without meta characters: a file is itself (a path named exactly is taken
// as given, links and all), a directory adds the regular files directly inside it (not recursively;
// a link there counts only when it leads to a regular file inside the directory), a missing path or
// anything else (a FIFO, a device) adds nothing.
func plainPath(full string) ([]string, []string) {
	fi, err := os.Stat(full)
	if err != nil {
		return nil, nil
	}
	if fi.Mode().IsRegular() {
		return []string{full}, nil
	}
	if !fi.IsDir() {
		return nil, nil
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		return nil, []string{fmt.Sprintf("skipping unreadable folder %s: %v", full, unwrapPath(err))}
	}
	root := realPath(full)
	var out, warnings []string
	for _, e := range entries {
		p := filepath.Join(full, e.Name())
		if e.Type().IsRegular() {
			out = append(out, p)
			continue
		}
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if _, inside := within(root, real); !inside {
			warnings = append(warnings, outsideWarning(p, real, full))
			continue
		}
		out = append(out, p)
	}
	return out, warnings
}

// groupGlobs puts globs into walk groups: one per base directory, and a base inside another base
// joins the outer group with its pattern prefixed by the (escaped) path between them, provided its
// real path lies inside the outer base's too (a base reached through a link is walked on its own).
func groupGlobs(globs []resolved, ruleIdx []int) []group {
	order := make([]int, len(globs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return globs[order[a]].base < globs[order[b]].base })
	var groups []group
	for _, i := range order {
		r := globs[i]
		placed := false
		for gi := range groups {
			g := &groups[gi]
			rel, ok := within(g.base, r.base)
			if !ok {
				continue
			}
			if _, real := within(g.root, r.root); !real {
				continue
			}
			pattern := r.pattern
			if rel != "" {
				pattern = escapeMeta(filepath.ToSlash(rel)) + "/" + pattern
			}
			g.matchers = append(g.matchers, newMatcher(ruleIdx[i], r, pattern))
			placed = true
			break
		}
		if !placed {
			groups = append(groups, group{base: r.base, root: r.root, matchers: []*matcher{newMatcher(ruleIdx[i], r, r.pattern)}})
		}
	}
	return groups
}

// within reports whether dir is base or lies under it, and the relative path between them.
func within(base, dir string) (string, bool) {
	if dir == base {
		return "", true
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	rest, ok := strings.CutPrefix(dir, prefix)
	return rest, ok
}

var metaEscaper = strings.NewReplacer("\\", "\\\\", "*", "\\*", "?", "\\?", "[", "\\[", "]", "\\]", "{", "\\{", "}", "\\}")

func escapeMeta(s string) string { return metaEscaper.Replace(s) }

func uniq(paths []string) []string {
	if len(paths) < 2 {
		return paths
	}
	seen := make(map[string]bool, len(paths))
	out := paths[:0:0]
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
