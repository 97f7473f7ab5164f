package contextfiles

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is s made safe to show on a terminal: a file name comes from a repository, and one that
// holds an escape sequence, a line break or a bidi override could move the cursor, forge a line of
// output or reorder what a person reads. Every control character (C0, DEL, C1, newline and tab
// included), every bidi embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), and every
// byte that is not UTF-8 is shown escaped (\x1b, \u202e); anything else is left as it is. Messages
// for people (the warnings) and the paths `context show` prints go through it; --json keeps paths
// as they are.
func Printable(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports a C1 control or a bidi embedding, override or isolate.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// printableAll applies Printable to each message.
func printableAll(msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = Printable(m)
	}
	return msgs
}
