package questionsweb

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/qkit-cli/qkit/internal/output"
)

// Listen opens the page's address: HOST:PORT with an IP address or localhost (port 0: a free one).
// A non-loopback address, which other machines can reach, needs allowRemote; remote reports one.
// A malformed or refused address is a usage error that names the flag (--addr, --allow-remote).
func Listen(addr string, allowRemote bool) (ln net.Listener, remote bool, err error) {
	network, remote, err := checkAddr(addr, allowRemote)
	if err != nil {
		return nil, remote, err
	}
	ln, err = net.Listen(network, addr)
	if err != nil {
		return nil, remote, fmt.Errorf("listen on %s: %w (pick another port with --addr, or port 0 for a free one)", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !remote && (!ok || !ta.IP.IsLoopback()) {
		// localhost resolved to something else (a hosts file): not what was promised.
		_ = ln.Close()
		return nil, true, output.UsageErrorf("--addr %s listens on %s, which is not a loopback address; pass --allow-remote to do that on purpose", addr, ln.Addr())
	}
	return ln, remote, nil
}

// checkAddr reads --addr: the network to listen on, and whether the address is reachable from
// other machines. Only an IP address or "localhost" is taken (never a name that could resolve
// anywhere), and a non-loopback one only with allowRemote.
func checkAddr(addr string, allowRemote bool) (network string, remote bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", false, output.UsageErrorf("invalid --addr %q: expected HOST:PORT, e.g. 127.0.0.1:8080", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", false, output.UsageErrorf("invalid --addr %q: the port must be a number from 0 to 65535 (0: a free one)", addr)
	}
	ip := net.ParseIP(host)
	switch {
	case strings.EqualFold(host, "localhost"):
	case ip == nil:
		return "", false, output.UsageErrorf("invalid --addr %q: give an IP address (127.0.0.1, or 0.0.0.0 with --allow-remote), not a host name", addr)
	case !ip.IsLoopback() && !allowRemote:
		return "", true, output.UsageErrorf("--addr %s is not a loopback address: the page would be reachable from other machines; pass --allow-remote to do that on purpose", addr)
	case !ip.IsLoopback():
		remote = true
	}
	network = "tcp"
	if ip.To4() != nil {
		network = "tcp4" // 0.0.0.0 means IPv4, not every address Go would take it for
	}
	return network, remote, nil
}
