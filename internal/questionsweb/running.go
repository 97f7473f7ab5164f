package questionsweb

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	if err != nil || json.Unmarshal(data, &r) != nil || !pageURL(r.URL) || r.Process.PID <= 0 {
		return Running{}, false // missing or damaged: no page is announced
	}
	return r, true
}

// pageURL reports whether u is what BaseURL writes: http://IP:port/. The URL is shown to the
// person (by the MCP tool), so a damaged or planted file cannot send them anywhere else.
func pageURL(u string) bool {
	rest, http := strings.CutPrefix(u, "http://")
	hostPort, slash := strings.CutSuffix(rest, "/")
	if !http || !slash {
		return false
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n > 0 && net.JoinHostPort(ip.String(), strconv.FormatUint(n, 10)) == hostPort
}
