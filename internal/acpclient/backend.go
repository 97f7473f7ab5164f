package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/filestore"
)

// The agent.backend values.
const (
	BackendAuto = "auto" // acp when the agent answers initialize, else chat
	BackendACP  = "acp"  // `<agent.command> acp`, this package
	BackendChat = "chat" // `<agent.command> chat --no-interactive`, the text runner
)

// BackendCacheFile is where ChooseBackend keeps what it learned, in qkit's state directory: one
// file for every front end (ask, acp serve), so an agent is probed once for all of them.
func BackendCacheFile(stateDir string) string { return filepath.Join(stateDir, "agent-backend.json") }

// ProbeTimeout bounds the initialize of a probe: an agent that has not answered by then is taken
// as not speaking ACP (q 1.19.7 exits at once; kiro answers within a second).
const ProbeTimeout = 10 * time.Second

// BackendChoice is how agent.backend was resolved for one run.
type BackendChoice struct {
	// Backend is acp or chat.
	Backend string
	// Probed is set when the agent was started to find out (nothing was cached for it).
	Probed bool
	// Reason says why, for logs and --json.
	Reason string
}

// ChooseBackend resolves agent.backend for command. acp and chat are taken as they are. auto uses
// what was learned about this agent binary before (cacheFile, keyed by its path, size and
// modification time, so an upgraded binary is probed again) unless refresh is set, and otherwise
// probes it: `<command> acp` and initialize, then the agent is stopped. A binary that cannot be
// found is not probed (chat, whose run reports the missing command) and nothing is cached for it.
func ChooseBackend(ctx context.Context, setting, command, cacheFile string, refresh bool, log *slog.Logger) (BackendChoice, error) {
	switch setting {
	case BackendACP, BackendChat:
		return BackendChoice{Backend: setting, Reason: "agent.backend=" + setting}, nil
	case BackendAuto, "":
	default:
		return BackendChoice{}, fmt.Errorf("agent.backend %q: expected auto, acp or chat", setting)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := binaryKey(command)
	if err != nil {
		return BackendChoice{Backend: BackendChat, Reason: "agent command not found"}, nil
	}
	if e, ok := learned(cacheFile, key); ok && !refresh {
		return e.choice(), nil
	}
	backend, why := Probe(ctx, command, log)
	if ctx.Err() != nil {
		return BackendChoice{}, ctx.Err()
	}
	key.Backend, key.ProbedAt = backend, time.Now().UTC()
	if err := writeBackendCache(cacheFile, key); err != nil {
		log.Warn("could not remember the agent's backend", "file", cacheFile, "error", err)
	}
	return BackendChoice{Backend: backend, Probed: true, Reason: why}, nil
}

// Probe starts `<command> acp`, waits (ProbeTimeout at most) for its answer to initialize, and stops
// it. It returns acp or chat and why.
func Probe(ctx context.Context, command string, log *slog.Logger) (string, string) {
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	c, err := Start(pctx, Options{Command: command, Args: []string{"acp"}, Logger: log, Grace: time.Second})
	var login *agent.LoginError
	if errors.As(err, &login) {
		// It answered initialize: it speaks ACP, and the run will say how to log in.
		log.Info("the agent speaks ACP (not logged in)", "command", command)
		return BackendACP, "probe: answered initialize, not logged in"
	}
	if err != nil {
		log.Info("the agent does not speak ACP: using chat --no-interactive", "command", command, "reason", err)
		return BackendChat, "probe: " + err.Error()
	}
	c.Close()
	log.Info("the agent speaks ACP", "command", command, "agent", agentName(c.Info()))
	return BackendACP, "probe: answered initialize as " + agentName(c.Info())
}

// LearnedBackend is what ChooseBackend with auto would take from cacheFile for command without
// probing it: the backend learned about this very binary (same path, size and modification time).
// ok is false when nothing is learned for it, or the binary changed since, or it cannot be found.
// It only reads the cache (`qkit doctor` reports it without changing it).
func LearnedBackend(cacheFile, command string) (choice BackendChoice, probedAt time.Time, ok bool) {
	key, err := binaryKey(command)
	if err != nil {
		return BackendChoice{}, time.Time{}, false
	}
	e, ok := learned(cacheFile, key)
	if !ok {
		return BackendChoice{}, time.Time{}, false
	}
	return e.choice(), e.ProbedAt, true
}

// learned is the entry of cacheFile for the binary key describes, if it still fits it.
func learned(cacheFile string, key backendEntry) (backendEntry, bool) {
	e, ok := readBackendCache(cacheFile)[key.Path]
	return e, ok && e.Size == key.Size && e.ModTime.Equal(key.ModTime)
}

func (e backendEntry) choice() BackendChoice {
	return BackendChoice{Backend: e.Backend, Reason: "learned " + e.ProbedAt.Format(time.RFC3339)}
}

// backendEntry is what is remembered about one agent binary.
type backendEntry struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	ModTime  time.Time `json:"mod_time"`
	Backend  string    `json:"backend"`
	ProbedAt time.Time `json:"probed_at"`
}

func binaryKey(command string) (backendEntry, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return backendEntry{}, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Stat(path)
	if err != nil {
		return backendEntry{}, err
	}
	return backendEntry{Path: path, Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

func readBackendCache(file string) map[string]backendEntry {
	out := map[string]backendEntry{}
	data, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	var entries []backendEntry
	if json.Unmarshal(data, &entries) != nil {
		return out // a damaged cache is only a reason to probe again
	}
	for _, e := range entries {
		if e.valid() {
			out[e.Path] = e
		}
	}
	return out
}

// valid reports whether e is an entry writeBackendCache could have written; anything else in the
// cache is damage, and the binary is probed again.
func (e backendEntry) valid() bool {
	return filepath.IsAbs(e.Path) && (e.Backend == BackendACP || e.Backend == BackendChat)
}

// writeBackendCache records e, under the cache's lock, atomically.
func writeBackendCache(file string, e backendEntry) error {
	return filestore.Update(file, 0o600, 0o700, func(old []byte) ([]byte, error) {
		var entries []backendEntry
		if json.Unmarshal(old, &entries) != nil {
			entries = nil // a damaged cache is rewritten, not half kept
		}
		entries = slices.DeleteFunc(entries, func(x backendEntry) bool { return x.Path == e.Path || !x.valid() })
		entries = append(entries, e)
		data, err := json.MarshalIndent(entries, "", "  ")
		return append(data, '\n'), err
	})
}

// RememberSession records id as the last ACP session run in dir (file maps folders to sessions).
func RememberSession(file, dir, id string) error {
	return filestore.Update(file, 0o600, 0o700, func(old []byte) ([]byte, error) {
		m := map[string]string{}
		if json.Unmarshal(old, &m) != nil {
			m = map[string]string{} // a damaged file is rewritten, not half kept
		}
		m[dir] = id
		data, err := json.MarshalIndent(m, "", "  ")
		return append(data, '\n'), err
	})
}

// LastSession is the last ACP session RememberSession recorded for dir, or "".
func LastSession(file, dir string) string { return Sessions(file)[dir] }

// Sessions are the ACP sessions RememberSession recorded: the last of each working directory,
// by directory (empty when there are none, or the file is damaged). An entry RememberSession
// could not have written (a relative folder, an empty id, control characters or spaces, which
// --session's completion lines cannot carry) is left out.
func Sessions(file string) map[string]string {
	m := map[string]string{}
	data, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(data, &m) != nil {
		return map[string]string{}
	}
	for dir, id := range m {
		if !filepath.IsAbs(dir) || strings.ContainsFunc(dir, unicode.IsControl) || id == "" ||
			strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) {
			delete(m, dir)
		}
	}
	return m
}
