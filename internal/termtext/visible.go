package termtext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Visible returns s as it may be written to a terminal: newline and tab are kept, and every other
// character a terminal would act on rather than show is written as a visible escape sequence:
//
//   - C0 control characters (below U+0020) and DEL as \xHH (ESC is \x1b, CR is \x0d);
//   - C1 control characters (U+0080–U+009F), which some terminals read as ESC + a letter (U+009B
//     is CSI), as \u0080 … \u009f;
//   - the bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, which
//     reorder the text around them, as \u202a … \u2069;
//   - each byte that is not part of valid UTF-8 as \xHH.
//
// Everything else is returned unchanged, backslashes included, so ordinary text reads as written
// (the result is not meant to be parsed back: a literal "\x1b" in s looks the same as an escaped
// ESC). The result is valid UTF-8 and holds no byte below 0x20 other than newline and tab.
func Visible(s string) string { return visible(s, false) }

// VisibleLine is Visible for text that must stay on one line: newline and tab are escaped too
// (\x0a, \x09), so a label or a header cannot draw lines of its own.
func VisibleLine(s string) string { return visible(s, true) }

func visible(s string, line bool) string {
	i := firstUnsafe(s, line)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			writeByte(&b, s[i])
		case unsafeRune(r, line):
			if r < utf8.RuneSelf {
				writeByte(&b, byte(r))
			} else {
				b.WriteString(`\u`)
				hex := strconv.FormatInt(int64(r), 16)
				b.WriteString(strings.Repeat("0", 4-len(hex)))
				b.WriteString(hex)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte of s that needs escaping, or -1.
func firstUnsafe(s string, line bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c), line) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unsafeRune(r, line) {
			return i
		}
		i += size
	}
	return -1
}

// unsafeRune reports whether a terminal would act on r rather than show it.
func unsafeRune(r rune, line bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return line
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func writeByte(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}
