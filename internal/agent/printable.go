package agent

import (
	"strings"
	"unicode/utf8"
)

// Printable is s made safe to print in a message on a terminal: the agent's ANSI escape sequences
// are removed, then every other control character (C0 but newline and tab, DEL, C1) is dropped and
// bytes that are not UTF-8 become U+FFFD. The agent's stderr and the error data its JSON-RPC
// errors carry reach the user's terminal through it, so they cannot move the cursor, retitle the
// window or leave the terminal in a colour.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var st stripper
	b := st.Strip(make([]byte, 0, len(s)), []byte(s))
	var out strings.Builder
	out.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size == 1:
			out.WriteRune(utf8.RuneError)
		case isControl(r):
		default:
			out.WriteRune(r)
		}
	}
	return out.String()
}

// isControl reports the runes Printable drops.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// isPrintable reports whether Printable would return s unchanged.
func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if isControl(rune(c)) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || isControl(r) {
			return false
		}
		i += size
	}
	return true
}
