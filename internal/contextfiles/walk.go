package contextfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// maxDepth stops a walk that would go deeper than any real tree (a last guard against loops).
const maxDepth = 256

// matcher is one glob rule, prepared so that a walk can prune directories and reject most file
// names without running the full pattern.
type matcher struct {
	rule    int    // index of the rule it belongs to
	text    string // the rule as the user gave it, for messages
	pattern string // doublestar pattern relative to the group's base
	// base is the rule's own base folder and root its real path: a file whose real path lies
	// outside root is never taken, however the walk reached it.
	base, root string
	segs       []string
	// deepAt is the index of the first segment holding "**" (len(segs) when none): from that depth
	// on, every directory may hold a match.
	deepAt int
	// prune is false when the pattern's segments cannot be judged one by one (alternations may hold
	// a slash); such a matcher visits everything under its base.
	prune bool
	// last is the final segment, used to reject file names cheaply; suffix is set when last is "*"
	// followed by literal text (e.g. "*.md").
	last   string
	suffix string
	filter bool
}

// newMatcher prepares glob rule number rule, resolved as r, for the walk of a group whose base is
// r.base or a folder above it; pat is r's pattern relative to the group's base.
func newMatcher(rule int, r resolved, pat string) *matcher {
	m := &matcher{rule: rule, text: r.rule, pattern: pat, base: r.base, root: r.root, segs: strings.Split(pat, "/")}
	m.deepAt = len(m.segs)
	for i, s := range m.segs {
		if strings.Contains(s, "**") {
			m.deepAt = i
			break
		}
	}
	m.prune = !strings.ContainsAny(pat, "{}") && !slashInsideMeta(pat)
	m.last = m.segs[len(m.segs)-1]
	if m.prune && m.last != "" && !strings.Contains(m.last, "**") {
		m.filter = true
		if rest, ok := strings.CutPrefix(m.last, "*"); ok && !strings.ContainsAny(rest, "*?[]{}\\") &&
			utf8.ValidString(rest) && !strings.ContainsRune(rest, utf8.RuneError) {
			m.suffix = rest
		}
	}
	return m
}

// slashInsideMeta reports whether a "/" is escaped or sits inside a character class: then the
// pattern cannot be split into segments at its slashes.
func slashInsideMeta(p string) bool {
	inClass := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			if i+1 < len(p) && p[i+1] == '/' {
				return true
			}
			i++
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && inClass:
			return true
		}
	}
	return false
}

// enters reports whether a directory named name at depth (0 = directly under the base) may hold
// matches.
func (m *matcher) enters(depth int, name string) bool {
	if !m.prune || depth >= m.deepAt {
		return true
	}
	if depth >= len(m.segs)-1 {
		return false
	}
	return doublestar.MatchUnvalidated(m.segs[depth], name)
}

// nameMay reports whether a file name can possibly match (a cheap test before the full match).
func (m *matcher) nameMay(name string) bool {
	if !m.filter {
		return true
	}
	if m.suffix != "" || m.last == "*" {
		return strings.HasSuffix(name, m.suffix)
	}
	return doublestar.MatchUnvalidated(m.last, name)
}

// group is a set of glob rules walked together from one base directory. root is the base's real
// path: the walk never enters a linked folder whose real path lies outside it.
type group struct {
	base     string
	root     string
	matchers []*matcher
}

// walker walks groups, following symbolic links to directories inside the group's base folder while
// refusing loops; links that lead outside the base (to a folder or a file) are skipped and reported.
// It never enters a pseudo file system (/proc, /sys), and one walk of a group stops at the limits.
type walker struct {
	onMatch func(rule int, path string)
	warn    func(msg string)
	// outside reports a link the walk does not follow because it leads out of base: the rules that
	// would have taken it (or walked into it). nil reports it through warn alone.
	outside        func(rules []int, path, real, base string)
	stopAfterFirst bool
	stopped        bool
	// open opens a directory for reading; nil means os.Open (tests make folders unreadable here,
	// since root reads every folder whatever its mode).
	open func(name string) (*os.File, error)
	// reals holds the real path of every directory on the current path from the base, so that a
	// link back to any of them is recognised as a loop.
	reals []string

	limits WalkLimits
	now    func() time.Time // nil means time.Now
	// seen counts the entries the current group's walk has looked at; deadline is when it must end.
	seen     int
	deadline time.Time
	// limited is set, with the limit reached, when the current group's walk stopped early.
	limited string
	mounts  mountTable
}

// walkGroup walks g and reports whether the walk went through to its end; when a limit stopped it,
// it says which in the returned text (the rules of g then take nothing: a part of a walk is
// whatever the directory order gave, not what the rule says).
func (w *walker) walkGroup(g group) (limited string) {
	fi, err := os.Stat(g.base)
	if err != nil || !fi.IsDir() {
		return "" // a missing base matches nothing
	}
	w.reals = append(w.reals[:0], g.root)
	w.seen, w.limited = 0, ""
	if w.limits.Timeout > 0 {
		w.deadline = w.clock().Add(w.limits.Timeout)
	}
	alive := make([]int, len(g.matchers))
	for i := range alive {
		alive[i] = i
	}
	w.walkDir(g, g.base, "", 0, alive)
	limited, w.limited = w.limited, ""
	return limited
}

func (w *walker) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// overLimit counts entries more entries of the walk and reports whether a limit is reached (and
// notes which). The clock is read at every folder and once every 256 entries.
func (w *walker) overLimit(entries int, folder bool) bool {
	if w.limited != "" {
		return true
	}
	w.seen += entries
	if max := w.limits.MaxFiles; max > 0 && w.seen > max {
		w.limited = fmt.Sprintf("its walk looked at more than %d files and folders, the limit (setting %s)", max, SettingWalkMaxFiles)
		return true
	}
	if w.limits.Timeout > 0 && (folder || w.seen%256 == 0) && w.clock().After(w.deadline) {
		w.limited = fmt.Sprintf("its walk took longer than %s, the limit (setting %s)", w.limits.Timeout, SettingWalkTimeout)
		return true
	}
	return false
}

// walkDir reads dir (rel is its slash path under the base, "" for the base) and recurses.
func (w *walker) walkDir(g group, dir, rel string, depth int, alive []int) {
	if w.stopped || w.overLimit(0, true) {
		return
	}
	if depth > maxDepth {
		w.warn(fmt.Sprintf("skipping %s: deeper than %d levels", dir, maxDepth))
		return
	}
	open := w.open
	if open == nil {
		open = os.Open
	}
	f, err := open(dir)
	if err != nil {
		w.warn(fmt.Sprintf("skipping unreadable folder %s: %v", dir, unwrapPath(err)))
		return
	}
	if kind := pseudoFS(f, w.reals[len(w.reals)-1], &w.mounts); kind != "" {
		_ = f.Close()
		texts := make([]string, len(alive))
		for i, m := range alive {
			texts[i] = g.matchers[m].text
		}
		w.warn(pseudoWarning(dir, kind, texts))
		return
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		w.warn(fmt.Sprintf("skipping unreadable folder %s: %v", dir, unwrapPath(err)))
		return
	}
	for _, e := range entries {
		if w.stopped || w.overLimit(1, false) {
			return
		}
		name := e.Name()
		path := joinPath(dir, name)
		typ := e.Type()
		// real is the entry's real path: its folder's real path and its name, or where its link
		// leads.
		real := joinPath(w.reals[len(w.reals)-1], name)
		linked := false
		if typ&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			if err != nil {
				if isLoop(err) {
					w.warn(fmt.Sprintf("skipping symlink loop at %s", path))
				}
				continue // a dangling link is no file
			}
			typ = fi.Mode().Type()
			if !typ.IsDir() && !typ.IsRegular() {
				continue
			}
			if real, err = filepath.EvalSymlinks(path); err != nil {
				w.warn(fmt.Sprintf("skipping symlink loop at %s", path))
				continue
			}
			linked = true
		}
		switch {
		case typ.IsDir():
			next := w.entering(g, alive, depth, name)
			if len(next) == 0 {
				continue
			}
			if linked {
				if _, inside := within(g.root, real); !inside {
					w.reportOutside(g, next, path, real, g.base)
					continue
				}
				if w.isAncestor(real) {
					w.warn(fmt.Sprintf("skipping symlink loop at %s", path))
					continue
				}
			}
			w.reals = append(w.reals, real)
			w.walkDir(g, path, joinRel(rel, name), depth+1, next)
			w.reals = w.reals[:len(w.reals)-1]
		case typ.IsRegular():
			w.matchFile(g, alive, rel, name, path, real)
		}
	}
}

// outsideWarning is the warning for a link the walk does not follow because it leads out of the
// rule's base folder.
func outsideWarning(path, real, base string) string {
	return fmt.Sprintf("skipping %s: %s", path, outsideReason(real, base))
}

// outsideReason says why a link out of base is not followed (the reason of a skipped entry).
func outsideReason(real, base string) string {
	return fmt.Sprintf("it links to %s, outside %s", real, base)
}

// reportOutside reports a link out of base that the matchers at idx (of g) would have followed.
func (w *walker) reportOutside(g group, idx []int, path, real, base string) {
	if w.outside == nil {
		w.warn(outsideWarning(path, real, base))
		return
	}
	rules := make([]int, len(idx))
	for i, m := range idx {
		rules[i] = g.matchers[m].rule
	}
	w.outside(rules, path, real, base)
}

func (w *walker) entering(g group, alive []int, depth int, name string) []int {
	var next []int
	for _, i := range alive {
		if g.matchers[i].enters(depth, name) {
			next = append(next, i)
		}
	}
	return next
}

func (w *walker) matchFile(g group, alive []int, rel, name, path, real string) {
	relName := ""
	for _, i := range alive {
		m := g.matchers[i]
		if !m.nameMay(name) {
			continue
		}
		if relName == "" {
			relName = joinRel(rel, name)
		}
		if doublestar.MatchUnvalidated(m.pattern, relName) {
			if _, inside := within(m.root, real); !inside {
				w.reportOutside(g, []int{i}, path, real, m.base)
				continue
			}
			w.onMatch(m.rule, path)
			if w.stopAfterFirst {
				w.stopped = true
				return
			}
		}
	}
}

// isAncestor reports whether real is, or contains, a directory on the current path.
func (w *walker) isAncestor(real string) bool {
	for _, r := range w.reals {
		if r == real || strings.HasPrefix(r, real+string(filepath.Separator)) || real == string(filepath.Separator) {
			return true
		}
	}
	return false
}

// joinPath is dir/name, without doubling the separator of a root folder ("/").
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// unwrapPath drops the operation and path of a *fs.PathError: the caller names the path itself.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
