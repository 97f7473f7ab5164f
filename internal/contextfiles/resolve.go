package contextfiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// resolved is one rule made concrete against a working directory and a home directory.
type resolved struct {
	rule string // as the user gave it
	full string // absolute and cleaned, in the OS's form
	glob bool
	// For globs: the static directory to walk and the doublestar pattern (slash-separated) relative
	// to it.
	base    string
	pattern string
	// root is the real path of base (symbolic links resolved; base itself when that fails): the
	// folder a glob's files must really lie in.
	root string
	// anchor is the folder a relative rule is relative to: cwd, or the folder its leading ".."
	// climb to. A glob's base or a folder rule's folder must really lie inside it (a cloned
	// repository's docs -> ~/.ssh must not feed docs/** the key). It is "" for an absolute or ~
	// rule: the user named its base, which is taken as given, links and all.
	anchor string
}

// isGlob reports whether a rule is a pattern rather than a path: it holds one of doublestar's meta
// characters.
func isGlob(p string) bool { return strings.ContainsAny(p, "*?[{") }

// validPattern reports whether a doublestar pattern is well formed.
func validPattern(p string) bool { return doublestar.ValidatePattern(p) }

func (s *Store) homeDir() (string, error) {
	if s.home != "" {
		return s.home, nil
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "", errors.New("could not determine home directory")
	}
	return h, nil
}

// resolve expands "~" and makes a relative rule absolute against cwd. "~user" is not expanded.
func (s *Store) resolve(rule, cwd string) (resolved, error) {
	r := resolved{rule: rule}
	p := rule
	if p == "" {
		return r, errors.New("empty path")
	}
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		home, err := s.homeDir()
		if err != nil {
			return r, err
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			wd, err := os.Getwd()
			if err != nil {
				return r, err
			}
			cwd = wd
		}
		r.anchor = anchorOf(cwd, p)
		p = filepath.Join(cwd, p)
	}
	r.full = filepath.Clean(p)
	r.glob = isGlob(rule)
	if r.glob {
		base, pat := doublestar.SplitPattern(filepath.ToSlash(r.full))
		r.base, r.pattern = filepath.FromSlash(base), pat
		r.root = realPath(r.base)
	}
	return r, nil
}

// anchorOf is the folder the relative path rel is anchored in: cwd, or the folder above it that
// rel's leading ".." elements (after cleaning) climb to.
func anchorOf(cwd, rel string) string {
	anchor := cwd
	for _, elem := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if elem != ".." {
			break
		}
		anchor = filepath.Dir(anchor)
	}
	return anchor
}

// linkedOut reports whether dir, the base of a relative glob rule or the folder of a relative
// folder rule, really lies outside the rule's anchor (one of its elements is a link out of it), and
// where it leads. A missing dir is not out: it matches nothing anyway.
func (r resolved) linkedOut(dir string) (real string, out bool) {
	if r.anchor == "" {
		return "", false
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	_, inside := within(realPath(r.anchor), real)
	return real, !inside
}

// realPath is path with every symbolic link resolved, or path itself when that fails (it does not
// exist, or a loop).
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// globHasMatch reports whether a glob rule matches at least one file (used to validate `add`), and
// when it does not, the walk's notes that may say why (a pseudo file system, an unreadable folder,
// a limit), at most three.
func (s *Store) globHasMatch(r resolved) (bool, []string) {
	found := false
	var notes []string
	w := walker{
		stopAfterFirst: true,
		onMatch:        func(int, string) { found = true },
		warn: func(msg string) {
			if len(notes) < 3 {
				notes = append(notes, msg)
			}
		},
		outside: func([]int, string, string, string) {},
		limits:  s.walkLimits(),
		now:     s.now,
	}
	if limited := w.walkGroup(group{base: r.base, root: r.root, matchers: []*matcher{newMatcher(0, r, r.pattern)}}); limited != "" {
		notes = append(notes, limited)
	}
	return found, notes
}
