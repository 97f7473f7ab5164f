package questionsweb

import (
	"net"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/output"
)

func TestListen(t *testing.T) {
	for _, c := range []struct {
		addr   string
		allow  bool
		remote bool
		usage  string // the usage error's text, "" when it listens
	}{
		{"127.0.0.1:0", false, false, ""},
		{"localhost:0", false, false, ""},
		{"[::1]:0", false, false, ""},
		{"0.0.0.0:0", true, true, ""},
		{"0.0.0.0:0", false, true, "is not a loopback address"},
		{"example.com:80", true, false, "give an IP address"},
		{"8080", false, false, "expected HOST:PORT"},
		{"127.0.0.1:", false, false, "expected HOST:PORT"},
		{"127.0.0.1:99999", false, false, "the port must be a number from 0 to 65535"},
		{"127.0.0.1:http", false, false, "the port must be a number from 0 to 65535"},
	} {
		ln, remote, err := Listen(c.addr, c.allow)
		if c.usage != "" {
			if output.Code(err) != output.ExitUsage || !strings.Contains(err.Error(), c.usage) || remote != c.remote {
				t.Errorf("Listen(%q, %v) = %v, %v (exit %d); want usage error %q", c.addr, c.allow, remote, err, output.Code(err), c.usage)
			}
			continue
		}
		if err != nil {
			if c.addr == "[::1]:0" {
				continue // no IPv6 loopback here
			}
			t.Fatalf("Listen(%q, %v): %v", c.addr, c.allow, err)
		}
		if remote != c.remote {
			t.Errorf("Listen(%q, %v): remote %v", c.addr, c.allow, remote)
		}
		if c.addr == "0.0.0.0:0" && ln.Addr().(*net.TCPAddr).IP.To4() == nil {
			t.Errorf("0.0.0.0 listens on %s %s, want IPv4", ln.Addr().Network(), ln.Addr())
		}
		_ = ln.Close()
	}
	taken, _, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if _, _, err := Listen(taken.Addr().String(), false); err == nil || output.Code(err) != output.ExitFailure ||
		!strings.Contains(err.Error(), "pick another port with --addr, or port 0 for a free one") {
		t.Fatalf("a taken port: %v (exit %d)", err, output.Code(err))
	}
}
