package acpproxy

import (
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/output"
)

// The editor ends with what the runner keeps of the same reply (output.Cap): the chunks that went
// out as they came, then what finish sends, whatever the chunks' sizes.
func FuzzCapped(f *testing.F) {
	f.Add("line 1\nline 2\nline 3\n", uint8(3), uint16(10))
	f.Add(strings.Repeat("héllo wörld\n", 40), uint8(7), uint16(200))
	f.Add(strings.Repeat("x", 500), uint8(200), uint16(150))
	f.Add("short", uint8(1), uint16(1000))
	f.Fuzz(func(t *testing.T, reply string, step uint8, limit uint16) {
		if step == 0 || limit == 0 {
			return
		}
		c := newCapped(int64(limit))
		var shown strings.Builder
		for i := 0; i < len(reply); i += int(step) {
			chunk := reply[i:min(i+int(step), len(reply))]
			if c.pass(chunk) {
				shown.WriteString(chunk)
			}
		}
		tail, cut := c.finish()
		shown.WriteString(tail)
		want, wantCut := output.Cap(reply, int64(limit))
		if shown.String() != want {
			t.Fatalf("the editor saw %q, the runner keeps %q", shown.String(), want)
		}
		if (cut == nil) != (wantCut == nil) || (cut != nil && *cut != *wantCut) {
			t.Fatalf("cut %+v, the runner's %+v", cut, wantCut)
		}
		if int64(len(c.held)) > int64(limit) {
			t.Fatalf("held %d bytes over a limit of %d", len(c.held), limit)
		}
	})
}
