package output

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// TerminalSafeJSON rewrites JSON as encoding/json writes it so that no character a terminal acts
// on appears raw: the C1 controls U+0080–U+009F (U+009B is a CSI, U+009D an OSC) and the
// bidirectional controls U+202A–U+202E and U+2066–U+2069 become \uXXXX escapes, as encoding/json
// already writes the C0 controls. They can only stand inside strings, where the escape is the
// same character: a program decoding the JSON gets the same values. b must be UTF-8 (what
// encoding/json writes is); it is returned unchanged when there is nothing to escape, else a new
// slice is.
func TerminalSafeJSON(b []byte) []byte {
	// Every character escaped is outside ASCII: most JSON is ASCII only, and a byte loop finds
	// that about seven times faster than decoding each rune (a 1.3 MB export: 2 ms against 15).
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return b
	}
	i := bytes.IndexFunc(b, jsonUnsafe)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i >= 0 {
		out = append(out, b[:i]...)
		r, size := utf8.DecodeRune(b[i:])
		out = fmt.Appendf(out, `\u%04x`, r)
		b = b[i+size:]
		i = bytes.IndexFunc(b, jsonUnsafe)
	}
	return append(out, b...)
}

// jsonUnsafe reports the characters TerminalSafeJSON escapes.
func jsonUnsafe(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
