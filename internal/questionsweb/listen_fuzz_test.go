package questionsweb

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/output"
)

// FuzzCheckAddr: whatever --addr says, questions serve listens without --allow-remote only on a
// loopback address as a second parser (net/netip) reads it, or on localhost; a host name or an
// odd spelling (0x7f.1, 127.1, a zone, "localhost.") is refused; a non-loopback IP needs
// --allow-remote and is then reported remote; and refusals are usage errors.
func FuzzCheckAddr(f *testing.F) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:0", "LOCALHOST:1", "[::1]:0", "0.0.0.0:0", "[::]:80",
		"[::ffff:127.0.0.1]:0", "[::ffff:0.0.0.0]:0", "[::127.0.0.1]:0", "0x7f.1:80", "127.1:80", "2130706433:80",
		"127.000.000.001:80", "localhost.:80", ":8080", "[fe80::1%lo]:0", "[::1%lo]:0", "192.168.1.10:80",
		"example.com:80", "127.0.0.1:99999", "127.0.0.1:+80", "[127.0.0.1]:80", "127.0.0.1 :80"} {
		f.Add(addr, false)
	}
	f.Fuzz(func(t *testing.T, addr string, allowRemote bool) {
		network, remote, err := checkAddr(addr, allowRemote)
		if err != nil {
			if output.Code(err) != output.ExitUsage {
				t.Fatalf("checkAddr(%q): %v is not a usage error", addr, err)
			}
			return
		}
		if network != "tcp" && network != "tcp4" {
			t.Fatalf("checkAddr(%q): network %q", addr, network)
		}
		host, _, splitErr := net.SplitHostPort(addr)
		if splitErr != nil {
			t.Fatalf("checkAddr(%q) took an address that is not HOST:PORT", addr)
		}
		if strings.EqualFold(host, "localhost") {
			if remote {
				t.Fatalf("checkAddr(%q): localhost reported remote", addr)
			}
			return
		}
		ip, perr := netip.ParseAddr(host)
		if perr != nil || ip.Zone() != "" {
			t.Fatalf("checkAddr(%q) took host %q, which is no plain IP address (%v)", addr, host, perr)
		}
		loopback := ip.Unmap().IsLoopback()
		if remote == loopback {
			t.Fatalf("checkAddr(%q): remote %v for %s (loopback %v)", addr, remote, ip, loopback)
		}
		if remote && !allowRemote {
			t.Fatalf("checkAddr(%q) took a non-loopback address without --allow-remote", addr)
		}
		if ip.Unmap().Is4() != (network == "tcp4") {
			t.Fatalf("checkAddr(%q): network %s for %s", addr, network, ip)
		}
	})
}
