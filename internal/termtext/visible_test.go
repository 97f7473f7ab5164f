package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want, line string }{
		{"plain text, café — ok", "plain text, café — ok", "plain text, café — ok"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\x0alines\x09and a tab`},
		// Cursor up and erase line: the label would show "no" and record "yes".
		{"yes\x1b[1A\x1b[2Kno", `yes\x1b[1A\x1b[2Kno`, `yes\x1b[1A\x1b[2Kno`},
		// OSC 52 (clipboard) and OSC 0 (window title), ended by BEL or ST.
		{"\x1b]52;c;cm0gLXJmIH4=\x07", `\x1b]52;c;cm0gLXJmIH4=\x07`, `\x1b]52;c;cm0gLXJmIH4=\x07`},
		{"\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`, `\x1b]0;pwned\x1b\`},
		{"carriage\rreturn, NUL\x00, DEL\x7f", `carriage\x0dreturn, NUL\x00, DEL\x7f`, `carriage\x0dreturn, NUL\x00, DEL\x7f`},
		// C1 controls as characters (U+009B is CSI) and as bare bytes (not UTF-8).
		{"\u009b31mred \u0085", `\u009b31mred \u0085`, `\u009b31mred \u0085`},
		{"bare \x9b and \xff\xfe", `bare \x9b and \xff\xfe`, `bare \x9b and \xff\xfe`},
		// Bidirectional overrides and isolates; the marks next to them are left alone.
		{"abc\u202edcba\u202c \u2066x\u2069 \u200f", `abc\u202edcba\u202c \u2066x\u2069 ` + "\u200f", `abc\u202edcba\u202c \u2066x\u2069 ` + "\u200f"},
		{"\u202a\u202b\u202d\u2067\u2068", `\u202a\u202b\u202d\u2067\u2068`, `\u202a\u202b\u202d\u2067\u2068`},
		// A truncated sequence at the end, and a replacement character that was really there.
		{"é\xc3", `é\xc3`, `é\xc3`},
		{"\ufffd", "\ufffd", "\ufffd"},
		{"", "", ""},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := VisibleLine(tc.in); got != tc.line {
			t.Errorf("VisibleLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}

// Text that needs no escaping is returned as it is, without a copy.
func TestVisibleKeepsSafeTextAsIs(t *testing.T) {
	s := strings.Repeat("Which language should we use? Go — static binary\n", 10)
	if n := testing.AllocsPerRun(10, func() { _ = Visible(s) }); n != 0 {
		t.Fatalf("%v allocations for text that is already safe", n)
	}
}

// FuzzVisible: whatever the input, the output is valid UTF-8 with no byte below 0x20 but newline
// and tab (none at all for VisibleLine), no DEL, no C1 control and no bidirectional override or
// isolate; text without any of those comes back unchanged.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"yes\x1b[1A\x1b[2Kno", "\x1b]52;c;eA==\x07", "\u202eabc", "\xc2\x9b", "\xff", "ok\n\tok", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, line := range []bool{false, true} {
			got := visible(s, line)
			if !utf8.ValidString(got) {
				t.Fatalf("%q (line %v): %q is not valid UTF-8", s, line, got)
			}
			for _, r := range got {
				bad := r < 0x20 && (line || r != '\n' && r != '\t') || r == 0x7f || r >= 0x80 && r <= 0x9f ||
					r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
				if bad {
					t.Fatalf("%q (line %v): %q still holds %U", s, line, got, r)
				}
			}
			if firstUnsafe(s, line) < 0 && got != s {
				t.Fatalf("%q (line %v): safe text changed to %q", s, line, got)
			}
		}
	})
}
