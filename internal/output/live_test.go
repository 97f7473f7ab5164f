package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What a front shows as the reply arrives, then Rest of what the runner kept (Cap), is exactly the
// kept reply, whatever the chunks' sizes; nothing shown as it arrives comes within CutHoldBack of
// the limit; and a reply of whole characters in whole-character chunks is never shown half of one.
func FuzzLive(f *testing.F) {
	f.Add("line 1\nline 2\nline 3\n", uint8(3), uint16(10), false)
	f.Add(strings.Repeat("héllo wörld\n", 40), uint8(7), uint16(200), false)
	f.Add(strings.Repeat("x", 500), uint8(200), uint16(150), true)
	// A two-byte character across the hold-back point (limit-CutHoldBack = 72): the ACP text
	// path sent its halves in two chunks, and the editor showed two replacement characters.
	f.Add(strings.Repeat("x", 71)+"é"+strings.Repeat("y", 200), uint8(90), uint16(200), false)
	f.Add("short", uint8(1), uint16(1000), false)
	f.Fuzz(func(t *testing.T, reply string, step uint8, limit uint16, byBytes bool) {
		if step == 0 {
			return
		}
		l := NewLive(int64(limit))
		var shown strings.Builder
		for _, chunk := range chunks(reply, int(step)) {
			n := 0
			if byBytes {
				n = l.ShowBytes([]byte(chunk))
			} else {
				n = l.Show(chunk)
			}
			if n < 0 || n > len(chunk) {
				t.Fatalf("Show(%q) = %d", chunk, n)
			}
			shown.WriteString(chunk[:n])
		}
		if l.Shown() != int64(shown.Len()) {
			t.Fatalf("Shown %d, shown %d bytes", l.Shown(), shown.Len())
		}
		if limit > 0 && int64(shown.Len()) > max(int64(limit)-CutHoldBack, 0) {
			t.Fatalf("%d bytes shown as they came, limit %d", shown.Len(), limit)
		}
		if utf8.ValidString(reply) && !utf8.ValidString(shown.String()) {
			t.Fatalf("shown %q ends inside a character", shown.String())
		}
		kept, cut := Cap(reply, int64(limit))
		if cut != nil {
			kept = kept[:cut.Kept] // without the notice
		}
		if !strings.HasPrefix(kept, shown.String()) {
			t.Fatalf("shown %q is not a prefix of the kept %q", shown.String(), kept)
		}
		if got := shown.String() + l.Rest(kept); got != kept {
			t.Fatalf("shown then Rest gives %q, the runner kept %q", got, kept)
		}
	})
}

// chunks splits s every step bytes, moved back to the start of a UTF-8 character (as the ACP text
// path's chunks come: whole characters); a chunk is at least one whole character.
func chunks(s string, step int) []string {
	var out []string
	for len(s) > 0 {
		n := min(step, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			_, n = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func TestLiveWholeChunks(t *testing.T) {
	l := NewLive(CutHoldBack + 10)
	if !l.Whole("0123456789") {
		t.Fatal("a chunk within the room was held")
	}
	if l.Whole("a") {
		t.Fatal("a chunk past the room went out")
	}
	if l.Whole("") {
		t.Fatal("after a held chunk, a later one went out")
	}
	if l.Shown() != 10 {
		t.Fatalf("Shown %d", l.Shown())
	}
	var unlimited Live
	if !unlimited.Whole(strings.Repeat("x", 1<<20)) || unlimited.Show("y") != 1 {
		t.Fatal("the zero Live held something back")
	}
}
