// Package fullbin finds and runs qkit-full, the helper executable the light qkit binary (build tag
// qkit_lite) hands the commands to that need packages it does not link (the MCP and ACP servers,
// the SQLite session store, aligned tables, JSON Schema validation), as git runs its helpers from
// libexec. The hand-over replaces the light process (exec), so the helper's signals, streams and
// exit code are the caller's own.
package fullbin

import (
	"errors"
	"os"
	"syscall"
)

// The package imports errors, os and syscall only (no fmt, path/filepath, even strings): the light
// binary's package early hands `qkit mcp serve` and the like over from its init, which Go runs
// once every package it imports has been initialised, and Go initialises the packages that are
// ready in import-path order: strings (like every package after "github.com/qkit-cli" in that
// order) would wait for crypto, encoding, reflect, x/text... (see package early). The light build
// is for unix systems, so paths are joined with "/".

// Name is the helper's file name.
const Name = "qkit-full"

// EnvPath names the helper to run instead of looking for it (tests, unusual installs).
const EnvPath = "QKIT_FULL_BIN"

// EnvForwarded is set in the helper's environment: a light binary that finds it set was itself
// started as the helper, and refuses to forward again (a light build installed as qkit-full would
// otherwise run itself forever). The full binary clears it as it starts, so the processes it runs
// (an agent that starts qkit again) do not inherit it.
const EnvForwarded = "QKIT_FORWARDED"

// Commands are the top-level commands the light binary hands to the helper whole, whatever follows
// them: the servers (the MCP SDK), sessions (SQLite) and doctor (it checks the NATS store).
// cmd's forwardedHeads gives each its help line.
var Commands = []string{"mcp", "acp", "sessions", "doctor"}

// Candidates are the paths the helper is looked for at, in order, for the executable at exe:
// beside it, then ../libexec/qkit/ (make install's layout). $QKIT_FULL_BIN, when set, is the only one.
func Candidates(exe string) []string {
	if p := os.Getenv(EnvPath); p != "" {
		return []string{p}
	}
	dir := parent(exe)
	return []string{join(dir, Name), join(parent(dir), "libexec/qkit/"+Name)}
}

// parent is the folder holding the file at the absolute, clean path p (os.Executable's).
func parent(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// join is dir/name for a folder dir from parent.
func join(dir, name string) string {
	if dir != "" && dir[len(dir)-1] == '/' {
		return dir + name
	}
	return dir + "/" + name
}

// Find returns the first candidate that is an executable file; the error names every path tried.
func Find() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", wrapped{Name + ": cannot find qkit's own executable to look beside it", err}
	}
	tried := Candidates(exe)
	for _, p := range tried {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	looked := ""
	for i, p := range tried {
		if i > 0 {
			looked += " and "
		}
		looked += p
	}
	return "", errors.New("this command needs " + Name + ", qkit's helper executable, and it is not installed: looked for " +
		looked + " (make install puts it in PREFIX/libexec/qkit; $" + EnvPath + " names another path)")
}

// Exec replaces this process with the helper running args (the command line after the program
// name). It returns only on failure. On Windows, which has no exec, it always fails: the light
// build is for unix systems, and Windows gets the full build as qkit.
func Exec(args []string) error {
	if os.Getenv(EnvForwarded) != "" {
		return errors.New("this command needs " + Name + ", and the " + Name + " that ran is a light build of qkit: " +
			"install the full binary as " + Name + " (make build makes both)")
	}
	path, err := Find()
	if err != nil {
		return err
	}
	env := append(os.Environ(), EnvForwarded+"=1")
	if err := syscall.Exec(path, append([]string{path}, args...), env); err != nil {
		return wrapped{"running " + path, err}
	}
	return nil
}

// wrapped is an error with what was being done (fmt.Errorf's "%s: %w" without fmt).
type wrapped struct {
	doing string
	err   error
}

func (w wrapped) Error() string { return w.doing + ": " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }
