package questions

import (
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadRunning: whatever the served-page record holds, reading it gives either nothing or a
// page URL as the server writes it (http, an IP address and port, path /; nothing else to send a
// person to) from a real process id; and a record the server writes reads back as it was.
func FuzzReadRunning(f *testing.F) {
	f.Add([]byte(`{"url":"http://127.0.0.1:8765/","process":{"pid":4242,"start":"123","host":"dev","boot":"b1"}}`))
	f.Add([]byte(`{"url":"http://[::1]:8765/","process":{"pid":1}}`))
	f.Add([]byte(`{"url":"https://example.invalid/phish","process":{"pid":4242}}`))
	f.Add([]byte(`{"url":"http://127.0.0.1:8765/","process":{"pid":0}}`))
	f.Add([]byte(`{"url":"http://127.0.0.1:8765/\u001b]8;;x\u0007","process":{"pid":4242}}`))
	f.Add([]byte(`{"url":"http://user@127.0.0.1:8765/","process":{"pid":4242}}`))
	f.Add([]byte(`{"url":"http://127.0.0.1:08765/","process":{"pid":4242}}`))
	f.Add([]byte(`{"url":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), runningFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, ok := readRunning(path)
		if !ok {
			if r != (RunningPage{}) {
				t.Fatalf("nothing announced, yet %+v", r)
			}
			return
		}
		u, err := url.Parse(r.URL)
		if err != nil || u.Scheme != "http" || u.User != nil || u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("announced %q (%v) from %q", r.URL, err, data)
		}
		if _, err := netip.ParseAddrPort(u.Host); err != nil {
			t.Fatalf("announced host %q (%v) from %q", u.Host, err, data)
		}
		if r.Process.PID <= 0 {
			t.Fatalf("announced process %+v", r.Process)
		}
		// What the server itself writes for this page reads back the same.
		dir := t.TempDir()
		if _, err := AnnouncePage(dir, r); err != nil {
			t.Fatal(err)
		}
		if back, ok := readRunning(filepath.Join(dir, runningFile)); !ok || back != r {
			t.Fatalf("announced %+v, read back %+v", r, back)
		}
	})
}
