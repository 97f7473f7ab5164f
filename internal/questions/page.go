package questions

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// Where a person can answer is the core's to say (AnswerHint): a terminal, the client's form, or
// the web page of a running `qkit questions serve`. The page's server records itself in the state
// folder (AnnouncePage) and every other qkit process reads that record (FindPage), so nothing that
// only points the person to the page needs the web server's code.

// runningFile, in the state folder, tells other qkit processes that a page is being served and
// where, so the MCP tool can point the person to it. It never holds the token.
const runningFile = "questions-serve.json"

// RunningPage describes a running `qkit questions serve`.
type RunningPage struct {
	URL     string  `json:"url"` // the page, without the token
	Process Process `json:"process"`
}

// AnnouncePage records r in stateDir, for FindPage in other processes; the returned func removes
// it again (only while it is still r's: a second server may have replaced it meanwhile).
func AnnouncePage(stateDir string, r RunningPage) (func(), error) {
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

// FindPage returns the page served from this state folder, when its server is still running.
func FindPage(stateDir string) (RunningPage, bool) {
	r, ok := readRunning(filepath.Join(stateDir, runningFile))
	if !ok || r.Process.Gone() {
		return RunningPage{}, false
	}
	return r, true
}

func readRunning(path string) (RunningPage, bool) {
	var r RunningPage
	// Never blocks, never reads much: a FIFO or a device put there is refused unread.
	data, err := filestore.ReadRegular(path, 64<<10)
	if err != nil || json.Unmarshal(data, &r) != nil || !pageURL(r.URL) || r.Process.PID <= 0 {
		return RunningPage{}, false // missing or damaged: no page is announced
	}
	return r, true
}

// pageURL reports whether u is what the page's server writes (questionsweb's BaseURL): http://IP:port/. The URL is shown to the
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
