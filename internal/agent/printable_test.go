package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// checkPrintable fails t when s holds what Printable must remove: ESC or another C0 control
// byte but newline and tab, DEL, a C1 control, a bidirectional control, or bytes that are not UTF-8.
func checkPrintable(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s is not UTF-8: %q", what, s)
	}
	for _, r := range s {
		if removed(r) {
			t.Fatalf("%s holds control character %U: %q", what, r, s)
		}
	}
}

// removed reports what Printable removes wherever it is: controls but newline and tab, and the
// bidirectional controls.
func removed(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, two\nlines\tand a tab":                   "plain text, two\nlines\tand a tab",
		"\x1b[31merror:\x1b[0m not logged in\r\n":             "error: not logged in\n",
		"\x1b]0;pwned\x07title kept":                          "title kept",
		"bell\x07 nul\x00 del\x7f c1\u009b2J bad\xffbyte":     "bell nul del c1 bad\ufffdbyte",
		"bidi \u202eoverride\u2066 isolate\u2069":             "bidi override isolate",
		"spinner\r⠋ Thinking...\r":                            "spinner⠋ Thinking...",
		"\x1b[2K\x1b[1G\x1b[?25lError: model unavailable\x1b": "Error: model unavailable",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := StderrSuffix("\x1b[0m\n\x1b[33mwarn\x1b[0m\n"); got != ": warn" {
		t.Errorf("StderrSuffix = %q", got)
	}
	if got := StderrSuffix("\x1b[0m\r\n"); got != "" {
		t.Errorf("StderrSuffix of escapes only = %q, want nothing", got)
	}
}

// FuzzPrintable: whatever the agent writes on stderr, what reaches a message has no escape or
// control character but newline and tab and is UTF-8; text that was printable already is kept as
// it was; and making it printable twice changes nothing.
func FuzzPrintable(f *testing.F) {
	f.Add("\x1b[31mError:\x1b[0m something failed\n")
	f.Add("\x1b]8;;https://example.invalid\x1b\\link\x1b]8;;\x1b\\")
	f.Add("\x1bP+q544e\x1b\\ after DCS")
	f.Add("\u009b31m C1 CSI \u009d0;t\u009c")
	f.Add("multi\nline\twith tabs\r\n")
	f.Add("\xff\xfe not UTF-8 \xc3")
	f.Add("⠋ Thinking... ✓ done 🛠️")
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		checkPrintable(t, "Printable", p)
		if Printable(p) != p {
			t.Fatalf("Printable is not stable: %q -> %q -> %q", s, p, Printable(p))
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, removed) && p != s {
			t.Fatalf("printable text changed: %q -> %q", s, p)
		}
		suffix := StderrSuffix(s)
		checkPrintable(t, "StderrSuffix", suffix)
		if suffix != "" && (!strings.HasPrefix(suffix, ": ") || strings.TrimSpace(suffix[2:]) != suffix[2:] || suffix == ": ") {
			t.Fatalf("StderrSuffix(%q) = %q", s, suffix)
		}
	})
}
