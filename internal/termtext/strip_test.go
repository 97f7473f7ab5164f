package termtext

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestStripper(t *testing.T) {
	cases := map[string]string{
		// ANSI escape sequences, as q and kiro colour their output.
		"\x1b[32mgreen\x1b[0m":                      "green",
		"\x1b[38;5;141m> \x1b[0mreply":              "> reply",
		"a\x1b]0;title\x07b":                        "ab",
		"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": "alink",
		"\x1b(Bplain":                               "plain",
		"\x1b7saved\x1b8":                           "saved",
		"tab\tand\nnewline":                         "tab\tand\nnewline",
		"broken \x1b[12\nnext":                      "broken \nnext",
		"€ and 日本":                                  "€ and 日本",
		// What an agent can do to a terminal: clipboard, clear screen, cursor moves.
		"copy\x1b]52;c;ZXZpbA==\x07 done":         "copy done",
		"copy\x1b]52;c;ZXZpbA==\x1b\\ done":       "copy done",
		"before\x1b[2J\x1b[Hafter":                "beforeafter",
		"yes\x1b[1A\x1b[2Kno":                     "yesno",
		"\x1bP+q544e\x1b\\after DCS":              "after DCS",
		"\x1b_APC\x1b\\\x1b^PM\x1b\\\x1bXSOS\x07": "",
		// C1 controls in UTF-8, with what they introduce.
		"c1\u009b2Jcsi":                  "c1csi",
		"\u009b31mred\u009b0m":           "red",
		"osc\u009d52;c;ZXZpbA==\u0007 x": "osc x",
		"osc\u009d0;title\u009c ST":      "osc ST",
		"dcs\u0090q\u009c.":              "dcs.",
		"other C1 \u0085\u0084\u009c.":   "other C1 .",
		// Bidirectional controls.
		"file\u202etxt.exe":                          "filetxt.exe",
		"\u202a\u202b\u202c\u202d\u202e|":            "|",
		"\u2066\u2067\u2068\u2069|":                  "|",
		"kept: \u200f\u061c\u2028 (not in the list)": "kept: \u200f\u061c\u2028 (not in the list)",
		// C0 controls but newline and tab, and DEL.
		"nul\x00bell\x07bs\x08del\x7fvt\x0bff\x0c.": "nulbellbsdelvtff.",
		"line\r\nnext\r\n":                          "line\nnext\n",
		"\x1b[2K\rspinner":                          "spinner",
		"safe\rrm -rf ~":                            "saferm -rf ~",
		// Bytes that are not UTF-8, and a raw 8-bit CSI byte, become U+FFFD.
		"bad\xffbyte \x9b2J": "bad\ufffdbyte \ufffd2J",
		// A stray ESC before text or a control.
		"\x1b\x07a":  "a",
		"\x1b\u00e9": "\u00e9",
		// A malformed CSI ends at the character that cannot be in it, which is read as text.
		"\x1b[1;\u202ex": "x",
	}
	for in, want := range cases {
		var s Stripper
		got := string(s.Flush(s.Strip(nil, []byte(in))))
		if got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
		if got := StripString(in); got != want {
			t.Errorf("StripString(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStripperChunks feeds each case one byte at a time: a sequence or a character split across
// chunks is removed (or kept) whole.
func TestStripperChunks(t *testing.T) {
	for _, in := range []string{
		"\x1b]52;c;ZXZpbA==\x07visible",
		"\u009b2Jvisible\u009d0;t\u009c",
		"\u202evisible\u2066",
		"日本\x1b[31m€\x1b[0m",
	} {
		var s Stripper
		var out []byte
		for i := range len(in) {
			out = s.Strip(out, []byte{in[i]})
		}
		out = s.Flush(out)
		if want := StripString(in); string(out) != want {
			t.Errorf("byte by byte %q = %q, whole %q", in, out, want)
		}
	}
}

func TestStripperLongString(t *testing.T) {
	// An OSC that never ends hides at most maxStripString bytes: the rest of the reply shows.
	in := "\x1b]0;" + string(bytes.Repeat([]byte("x"), maxStripString+10)) + "\nvisible"
	got := StripString(in)
	if !bytes.HasSuffix([]byte(got), []byte("\nvisible")) || len(got) > 20 {
		t.Fatalf("got %q", got)
	}
}

func TestFlush(t *testing.T) {
	var s Stripper
	out := s.Strip(nil, []byte("end \xe2\x82")) // the start of "€"
	if string(out) != "end " {
		t.Fatalf("before the flush: %q", out)
	}
	if out = s.Flush(out); string(out) != "end \ufffd\ufffd" {
		t.Fatalf("after the flush: %q", out)
	}
	// After a flush the Stripper starts again: an open sequence does not swallow the next stream.
	s.Strip(nil, []byte("\x1b]0;open"))
	s.Flush(nil)
	if got := s.Strip(nil, []byte("shown")); string(got) != "shown" {
		t.Fatalf("after a flush: %q", got)
	}
}

func TestStripStringKeepsCleanText(t *testing.T) {
	s := "plain text, two\nlines\tand a tab, € and 日本 🛠️"
	if got := StripString(s); got != s {
		t.Fatalf("%q changed to %q", s, got)
	}
}

// checkSafe fails t when out holds what a terminal acts on.
func checkSafe(t *testing.T, in, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatalf("%q gave %q: not UTF-8", in, out)
	}
	for _, r := range string(out) {
		if stripDropped(r) {
			t.Fatalf("%q gave %q: holds %U", in, out, r)
		}
	}
}

// FuzzStripper: splitting the input anywhere gives what stripping it whole gives, and nothing a
// terminal acts on survives (ESC, C0 but newline and tab, DEL, C1, bidi controls, bytes that are
// not UTF-8); stripping again changes nothing.
func FuzzStripper(f *testing.F) {
	f.Add([]byte("\x1b[32mgreen\x1b[0m"), 3)
	f.Add([]byte("a\x1b]0;t\x1b\\b"), 4)
	f.Add([]byte("\u009b2J\u009d52;c;eA==\u009c\u202e\x00"), 2)
	f.Add([]byte("日本\xe2\x82"), 5)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		var whole Stripper
		want := whole.Flush(whole.Strip(nil, in))
		checkSafe(t, in, want)
		if again := StripString(string(want)); again != string(want) {
			t.Fatalf("not stable: %q -> %q -> %q", in, want, again)
		}
		if len(in) == 0 {
			return
		}
		split = ((split % len(in)) + len(in)) % len(in)
		var parts Stripper
		got := parts.Strip(nil, in[:split])
		got = parts.Strip(got, in[split:])
		got = parts.Flush(got)
		if !bytes.Equal(got, want) {
			t.Fatalf("split at %d: %q, whole: %q", split, got, want)
		}
	})
}

// BenchmarkStrip strips a typical coloured reply.
func BenchmarkStrip(b *testing.B) {
	line := []byte("\x1b[38;5;141m> \x1b[0m\x1b[32mHere is the answer to your question, with some \x1b[1mbold\x1b[0m text.\x1b[0m\n")
	var s Stripper
	var out []byte
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		out = s.Strip(out[:0], line)
	}
}

// BenchmarkStripPlain strips a reply with nothing to remove (the ACP backend's usual text).
func BenchmarkStripPlain(b *testing.B) {
	line := []byte("Here is the answer to your question, in plain text with a € sign and 日本語.\n")
	var s Stripper
	var out []byte
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		out = s.Strip(out[:0], line)
	}
}
