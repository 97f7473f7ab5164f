package sessionrec

import "path/filepath"

// SameFolder reports whether a and b are the same folder: the same path once cleaned, or the same
// folder once links are resolved. It is the one rule every door uses for "a session's folder":
// ask --session and the MCP tool's session_id (a session goes on only in its folder), the MCP
// tool's resume (the folder's last session) and sessions list --cwd, so a session recorded
// through a link to a project is found from the project and the other way round.
func SameFolder(a, b string) bool { return InFolder(a)(b) }

// InFolder returns SameFolder(dir, ·) for testing many stored folders against one: dir's links
// are resolved once, and each folder asked about once. The function is not safe for concurrent
// use.
func InFolder(dir string) func(folder string) bool {
	clean := filepath.Clean(dir)
	real, err := filepath.EvalSymlinks(clean)
	seen := map[string]bool{}
	return func(folder string) bool {
		f := filepath.Clean(folder)
		if f == clean {
			return true
		}
		if err != nil {
			return false // dir does not exist (any more): only its own spelling is it
		}
		same, ok := seen[f]
		if !ok {
			r, err := filepath.EvalSymlinks(f)
			same = err == nil && r == real
			seen[f] = same
		}
		return same
	}
}
