package questionsweb

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/questions"
)

// runningFile, in the state folder, tells other qkit processes that a page is being served and
// where, so the MCP tool can point the person to it. It never holds the token.
const runningFile = "questions-serve.json"

// Running describes a running `qkit questions serve`.
type Running struct {
	URL     string            `json:"url"` // the page, without the token
	Process questions.Process `json:"process"`
}

// announce records r in stateDir; the returned func removes it again.
func announce(stateDir string, r Running) (func(), error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, runningFile)
	if err := filestore.ReplaceAtomic(path, append(data, '\n'), 0o600, 0o700); err != nil {
		return nil, err
	}
	return func() {
		// Only our own record: a second server may have replaced it meanwhile.
		if cur, ok := readRunning(path); ok && cur.Process == r.Process {
			_ = os.Remove(path)
		}
	}, nil
}

// FindRunning returns the page served from this state folder, when its server is still running.
func FindRunning(stateDir string) (Running, bool) {
	r, ok := readRunning(filepath.Join(stateDir, runningFile))
	if !ok || r.Process.Gone() {
		return Running{}, false
	}
	return r, true
}

func readRunning(path string) (Running, bool) {
	var r Running
	// Never blocks, never reads much: a FIFO or a device put there is refused unread.
	data, err := filestore.ReadRegular(path, 64<<10)
	if err != nil || json.Unmarshal(data, &r) != nil || r.URL == "" {
		return Running{}, false
	}
	return r, true
}
