package acpclient

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// InitializeCacheFile is where what an agent answered to initialize is kept, beside what
// ChooseBackend learned (BackendCacheFile), in qkit's state directory: `acp serve` answers an
// editor's initialize from it without starting the agent.
func InitializeCacheFile(stateDir string) string {
	return filepath.Join(stateDir, "agent-initialize.json")
}

// initEntry is one agent's initialize answer, keyed by the command line it was started with and
// the identity of its binary (path, size, modification time), so a changed binary (an upgrade)
// or other flags learn again.
type initEntry struct {
	Argv       []string        `json:"argv"`
	Path       string          `json:"path"`
	Size       int64           `json:"size"`
	ModTime    time.Time       `json:"mod_time"`
	Initialize json.RawMessage `json:"initialize"`
}

// LearnedInitialize is the initialize answer cacheFile keeps for the agent started as argv, when
// its binary is still the one that gave it; ok is false otherwise (nothing kept, the binary
// changed or cannot be found, a damaged file).
func LearnedInitialize(cacheFile string, argv []string) (acp.InitializeResponse, bool) {
	if len(argv) == 0 {
		return acp.InitializeResponse{}, false
	}
	key, err := binaryKey(argv[0])
	if err != nil {
		return acp.InitializeResponse{}, false
	}
	for _, e := range readInitCache(cacheFile) {
		if slices.Equal(e.Argv, argv) && e.Path == key.Path && e.Size == key.Size && e.ModTime.Equal(key.ModTime) {
			var resp acp.InitializeResponse
			if json.Unmarshal(e.Initialize, &resp) != nil {
				return acp.InitializeResponse{}, false
			}
			return resp, true
		}
	}
	return acp.InitializeResponse{}, false
}

// RememberInitialize records what the agent started as argv answered to initialize, replacing
// what was kept for that command line; it writes nothing when that is what is kept already.
func RememberInitialize(cacheFile string, argv []string, resp acp.InitializeResponse) error {
	if len(argv) == 0 {
		return nil
	}
	key, err := binaryKey(argv[0])
	if err != nil {
		return nil // nothing is learned of a binary that cannot be found
	}
	data, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	e := initEntry{Argv: slices.Clone(argv), Path: key.Path, Size: key.Size, ModTime: key.ModTime, Initialize: data}
	if old, ok := LearnedInitialize(cacheFile, argv); ok {
		if was, err := json.Marshal(old); err == nil && bytes.Equal(was, data) {
			return nil
		}
	}
	return filestore.Update(cacheFile, 0o600, 0o700, func(old []byte) ([]byte, error) {
		var entries []initEntry
		if json.Unmarshal(old, &entries) != nil {
			entries = nil // a damaged cache is rewritten, not half kept
		}
		entries = slices.DeleteFunc(entries, func(x initEntry) bool { return slices.Equal(x.Argv, argv) || !x.valid() })
		entries = append(entries, e)
		out, err := json.MarshalIndent(entries, "", "  ")
		return append(out, '\n'), err
	})
}

func readInitCache(file string) []initEntry {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var entries []initEntry
	if json.Unmarshal(data, &entries) != nil {
		return nil // a damaged cache is only a reason to start the agent
	}
	return slices.DeleteFunc(entries, func(e initEntry) bool { return !e.valid() })
}

func (e initEntry) valid() bool {
	return len(e.Argv) > 0 && filepath.IsAbs(e.Path) && json.Valid(e.Initialize)
}
