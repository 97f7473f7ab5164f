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
// before profile) that matched it. relative is set when a relative rule matched it.
type fileRef struct {
	path     string
	scope    string
	relative bool
}

// skipRef is a path a rule would have taken but for a link out of the folder it must stay in: the
// link (or the linked folder), the scope as for fileRef, and why.
type skipRef struct {
	fileRef
	reason string
}

// expansion is what a set of rules resolves to.
type expansion struct {
	counts   []int     // files matched per rule
	files    []fileRef // sorted by path, each once
	skipped  []skipRef // sorted by path, each once, none of them in files
	warnings []string
}

// expand resolves rules against cwd. A relative rule (a file, a folder or a glob) takes nothing
// whose real path lies outside cwd (or the folder its leading ".." climb to): a link out, at the
// path itself or at any folder on the way, is skipped with a warning and listed in skipped. An
// absolute or ~ rule is taken as given, but no link out of a glob's or a folder's base is followed.
// Every glob base is walked once: globs sharing a base, or whose base lies inside another glob's
// base, are matched in the same walk, within s's walk limits. Missing paths and globs that match
// nothing contribute no files; unreadable folders, symlink loops, pseudo file systems and walks
// stopped by a limit become warnings.
func (s *Store) expand(rules []ruleRef, cwd string) expansion {
	ex := expansion{counts: make([]int, len(rules))}
	matched := make([][]string, len(rules))
	relative := make([]bool, len(rules))
	skips := map[string]skipRef{}
	outside := func(ruleIdx []int, path, real, base string) {
		ex.warnings = append(ex.warnings, outsideWarning(path, real, base))
		for _, i := range ruleIdx {
			sk, seen := skips[path]
			if !seen {
				sk = skipRef{fileRef: fileRef{path: path, scope: rules[i].scope}, reason: outsideReason(real, base)}
			} else if rules[i].scope == ScopeGlobal {
				sk.scope = ScopeGlobal
			}
			sk.relative = sk.relative || relative[i]
			skips[path] = sk
		}
	}
	var globs []resolved
	var globRule []int
	for i, rule := range rules {
		r, err := s.resolve(rule.text, cwd)
		if err != nil {
			ex.warnings = append(ex.warnings, fmt.Sprintf("skipping %s: %v", rule.text, err))
			continue
		}
		relative[i] = r.anchor != ""
		if r.glob {
			if !validPattern(r.pattern) {
				ex.warnings = append(ex.warnings, fmt.Sprintf("skipping %s: invalid glob pattern", rule.text))
				continue
			}
			if real, out := r.linkedOut(r.base); out {
				outside([]int{i}, r.base, real, r.anchor)
				continue
			}
			globs = append(globs, r)
			globRule = append(globRule, i)
			continue
		}
		if real, out := r.linkedOut(r.full); out {
			outside([]int{i}, r.full, real, r.anchor)
			continue
		}
		var warnings []string
		matched[i], warnings = plainPath(r.full, rule.text, func(path, real, base string) { outside([]int{i}, path, real, base) })
		ex.warnings = append(ex.warnings, warnings...)
	}
	w := walker{
		onMatch: func(rule int, path string) { matched[rule] = append(matched[rule], path) },
		warn:    func(msg string) { ex.warnings = append(ex.warnings, msg) },
		outside: outside,
		limits:  s.walkLimits(),
		now:     s.now,
	}
	for _, g := range groupGlobs(globs, globRule) {
		if limited := w.walkGroup(g); limited != "" {
			for _, m := range g.matchers {
				matched[m.rule] = nil
				ex.warnings = append(ex.warnings, fmt.Sprintf("skipping rule '%s': %s; it takes no file. Narrow the rule, or raise the setting", m.text, limited))
			}
		}
	}
	ex.warnings = uniq(ex.warnings)

	taken := map[string]fileRef{}
	for i, paths := range matched {
		ex.counts[i] = len(uniq(paths))
		for _, p := range paths {
			f, ok := taken[p]
			if !ok || rules[i].scope == ScopeGlobal {
				f.path, f.scope = p, rules[i].scope
			}
			f.relative = f.relative || relative[i]
			taken[p] = f
		}
	}
	ex.files = make([]fileRef, 0, len(taken))
	for _, f := range taken {
		ex.files = append(ex.files, f)
	}
	sort.Slice(ex.files, func(i, j int) bool { return ex.files[i].path < ex.files[j].path })
	for p, sk := range skips {
		if _, ok := taken[p]; !ok { // another rule took it from inside its own folder
			ex.skipped = append(ex.skipped, sk)
		}
	}
	sort.Slice(ex.skipped, func(i, j int) bool { return ex.skipped[i].path < ex.skipped[j].path })
	return ex
}

// plainPath expands a rule without meta characters, text as the user gave it: a file is itself, a
// directory adds the regular files directly inside it (not recursively; a link there counts only
// when it leads to a regular file inside the directory, others go to outside), a missing path or
// anything else (a FIFO, a device) adds nothing. A directory on a pseudo file system adds nothing.
func plainPath(full, text string, outside func(path, real, base string)) ([]string, []string) {
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
	unreadable := func(err error) []string {
		return []string{fmt.Sprintf("skipping unreadable folder %s: %v", full, unwrapPath(err))}
	}
	d, err := os.Open(full)
	if err != nil {
		return nil, unreadable(err)
	}
	root := realPath(full)
	var mounts mountTable
	if kind := pseudoFS(d, root, &mounts); kind != "" {
		_ = d.Close()
		return nil, []string{pseudoWarning(full, kind, []string{text})}
	}
	entries, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return nil, unreadable(err)
	}
	var out []string
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
			outside(p, real, full)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
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
