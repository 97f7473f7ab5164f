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

// ChatTTL is how long a probe's "no ACP" is believed: the agent answered `acp` by exiting or with
// something that is not JSON-RPC. After it the agent is probed again, so an agent that learned
// ACP since (or failed to start once) is not kept on chat for good. A probe that got no answer
// at all (slower than ProbeTimeout) is not remembered: the next run probes again.
const ChatTTL = time.Hour

// BackendChoice is how agent.backend was resolved for one run.
type BackendChoice struct {
	// Backend is acp or chat.
	Backend string
	// Probed is set when the agent was started to find out (nothing was cached for it).
	Probed bool
	// Learned is set when the choice came from what an earlier probe learned (agent.backend
	// auto): see Stale.
	Learned bool
	// Reason says why, for logs and --json.
	Reason string
}

// Stale reports whether err, from a run on the backend c chose, shows that what was learned about
// the agent is out of date: c is acp learned by an earlier probe, and the agent did not answer
// initialize as an ACP agent (*NotACPError; the run has forgotten what was learned). Nothing of
// the prompt reached the agent then: the caller chooses again (ChooseBackend with refresh) and
// runs on what that says.
func (c BackendChoice) Stale(err error) bool {
	var nacp *NotACPError
	return c.Learned && c.Backend == BackendACP && errors.As(err, &nacp)
}

// ChooseBackend resolves agent.backend for command (agent.command). acp and chat are taken as
// they are; an ACP agent given as a command line (agent.Describe) has no chat, so it is acp for
// auto and an error for chat. auto uses what was learned about this agent binary before
// (cacheFile, keyed by its path, size and modification time, so an upgraded binary is probed
// again; "no ACP" only for ChatTTL) unless refresh is set, and otherwise probes it: `<command>
// acp` and initialize, then the agent is stopped. A binary that cannot be found is not probed
// (chat, whose run reports the missing command) and nothing is cached for it.
func ChooseBackend(ctx context.Context, setting, command, cacheFile string, refresh bool, log *slog.Logger) (BackendChoice, error) {
	d := agent.Describe(command)
	switch setting {
	case BackendChat:
		if !d.HasChat() {
			return BackendChoice{}, &agent.NoChatError{Agent: d}
		}
		return BackendChoice{Backend: setting, Reason: "agent.backend=" + setting}, nil
	case BackendACP:
		return BackendChoice{Backend: setting, Reason: "agent.backend=" + setting}, nil
	case BackendAuto, "":
	default:
		return BackendChoice{}, fmt.Errorf("agent.backend %q: expected auto, acp or chat", setting)
	}
	if !d.HasChat() {
		return BackendChoice{Backend: BackendACP, Reason: "agent.command is an ACP agent's command line"}, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := binaryKey(d.Program)
	if err != nil {
		return BackendChoice{Backend: BackendChat, Reason: "agent command not found"}, nil
	}
	if e, ok := learned(cacheFile, key); ok && !refresh && e.fresh(time.Now()) {
		return e.choice(), nil
	}
	backend, why, sure := probe(ctx, d, ProbeTimeout, log)
	if ctx.Err() != nil {
		return BackendChoice{}, ctx.Err()
	}
	key.Backend, key.ProbedAt = backend, time.Now().UTC()
	if sure {
		err = writeBackendCache(cacheFile, key)
	} else {
		err = ForgetBackend(cacheFile, d.Program)
	}
	if err != nil {
		log.Warn("could not remember the agent's backend", "file", cacheFile, "error", err)
	}
	return BackendChoice{Backend: backend, Probed: true, Reason: why}, nil
}

// Probe starts `<command> acp`, waits (ProbeTimeout at most) for its answer to initialize, and stops
// it. It returns acp or chat and why.
func Probe(ctx context.Context, command string, log *slog.Logger) (string, string) {
	backend, why, _ := probe(ctx, agent.Describe(command), ProbeTimeout, log)
	return backend, why
}

// probe is Probe, waiting timeout at most; sure is false when the agent gave no answer either
// way (it did not start, or was slower than timeout), which is not worth remembering.
func probe(ctx context.Context, d agent.Description, timeout time.Duration, log *slog.Logger) (backend, why string, sure bool) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := d.ACPArgv("", "", false, nil)
	c, err := Start(pctx, Options{Command: argv[0], Args: argv[1:], Agent: d, Logger: log, Grace: time.Second})
	var login *agent.LoginError
	var nacp *NotACPError
	switch {
	case errors.As(err, &login):
		// It answered initialize: it speaks ACP, and the run will say how to log in.
		log.Info("the agent speaks ACP (not logged in)", "command", d.Command)
		return BackendACP, "probe: answered initialize, not logged in", true
	case errors.As(err, &nacp):
		log.Info("the agent does not speak ACP: using chat --no-interactive", "command", d.Command, "reason", err)
		return BackendChat, "probe: " + err.Error(), true
	case err != nil:
		log.Info("the agent did not answer the ACP probe: using chat --no-interactive this time", "command", d.Command, "reason", err)
		return BackendChat, "probe (not remembered): " + err.Error(), false
	}
	c.Close()
	log.Info("the agent speaks ACP", "command", d.Command, "agent", agentName(c.Info()))
	return BackendACP, "probe: answered initialize as " + agentName(c.Info()), true
}

// ForgetBackend drops what ChooseBackend learned about command, so that the next auto choice
// probes it again (a run found the learned acp out of date).
func ForgetBackend(cacheFile, command string) error {
	key, err := binaryKey(agent.Describe(command).Program)
	if err != nil {
		return nil // nothing was learned of a binary that cannot be found
	}
	if _, ok := readBackendCache(cacheFile)[key.Path]; !ok {
		return nil
	}
	return filestore.Update(cacheFile, 0o600, 0o700, func(old []byte) ([]byte, error) {
		var entries []backendEntry
		if json.Unmarshal(old, &entries) != nil {
			entries = nil
		}
		entries = slices.DeleteFunc(entries, func(x backendEntry) bool { return x.Path == key.Path || !x.valid() })
		data, err := json.MarshalIndent(entries, "", "  ")
		return append(data, '\n'), err
	})
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
	return BackendChoice{Backend: e.Backend, Learned: true, Reason: "learned " + e.ProbedAt.Format(time.RFC3339)}
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

// fresh reports whether what e says still holds at now: acp until the binary changes, chat for
// ChatTTL.
func (e backendEntry) fresh(now time.Time) bool {
	if e.Backend == BackendACP {
		return true
	}
	age := now.Sub(e.ProbedAt)
	return age >= 0 && age < ChatTTL
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
// could not have written (a relative folder, an empty id, control characters or spaces) is left
// out. The ids are the agent's text, for --resume to pass back to it, and printed nowhere:
// --session completes to qkit's stored ids (cmd/ask.go askSessions).
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
