package termtext

import "unicode/utf8"

// Stripper removes from a stream of text what a terminal would act on rather than show: ANSI
// escape sequences (CSI such as ESC[2J, OSC such as OSC 52 clipboard writes and window titles,
// DCS, SOS, PM, APC, and two-byte ESC sequences), their C1 forms in UTF-8 (U+009B CSI, U+009D
// OSC, U+0090 DCS, U+0098 SOS, U+009E PM, U+009F APC, each with what follows up to its end),
// every other C0 and C1 control character but newline and tab (NUL, BEL, backspace, carriage
// return, DEL …), and the bidirectional controls U+202A–U+202E and U+2066–U+2069. Bytes that are
// not UTF-8 become U+FFFD. Everything else passes unchanged.
//
// A carriage return is removed, not kept: a lone one lets later text overwrite what the reader
// saw, and a CRLF line end becomes a plain line break.
//
// It keeps its state between calls, so a sequence or a UTF-8 character split across two chunks is
// still handled whole: stripping a stream in pieces gives what stripping it at once gives. Its
// zero value is ready to use; use one Stripper per stream.
type Stripper struct {
	// KeepCR lets carriage returns through, for a reader that needs them to find what an agent
	// drew over a line (q's spinner) and removes the rest itself (agent's chat text parser).
	KeepCR bool

	state uint8
	n     int               // bytes of the current string sequence (OSC, DCS, ...)
	held  [utf8.UTFMax]byte // the start of a UTF-8 character the next chunk completes
	nheld int
}

// The Stripper's states.
const (
	stripText      = iota // ordinary text
	stripEsc              // after ESC
	stripCSI              // in a control sequence (ESC [ or U+009B): up to its final byte
	stripIntermed         // after ESC and intermediate bytes, e.g. ESC ( before B
	stripString           // in OSC, DCS, SOS, PM or APC: up to BEL or ST (ESC \ or U+009C)
	stripStringEsc        // ESC inside a string: ST if the next character is '\'
)

// maxStripString bounds an unterminated string sequence (OSC, DCS…): past it the text shows
// again, so an agent that never ends one cannot hide the rest of its reply.
const maxStripString = 4096

// Strip appends p, filtered, to dst and returns the extended slice.
func (s *Stripper) Strip(dst, p []byte) []byte {
	if s.nheld > 0 {
		// Finish the character the last chunk began: it and the start of p, decoded together.
		var buf [2 * utf8.UTFMax]byte
		k := copy(buf[:], s.held[:s.nheld])
		b := buf[:k+copy(buf[k:], p)]
		i := 0
		for i < k {
			if !utf8.FullRune(b[i:]) { // p is used up and the character is still not whole
				s.nheld = copy(s.held[:], b[i:])
				return dst
			}
			r, size := utf8.DecodeRune(b[i:])
			dst = s.put(dst, r, b[i:i+size])
			i += size
		}
		s.nheld = 0
		p = p[i-k:]
	}
	for i := 0; i < len(p); {
		if s.state == stripText {
			j := i
			for j < len(p) && plainASCII(p[j]) {
				j++
			}
			if j > i {
				dst = append(dst, p[i:j]...)
				i = j
				continue
			}
		}
		if p[i] < utf8.RuneSelf {
			dst = s.put(dst, rune(p[i]), p[i:i+1])
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			s.nheld = copy(s.held[:], p[i:])
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		dst = s.put(dst, r, p[i:i+size])
		i += size
	}
	return dst
}

// Flush ends the stream: a UTF-8 character left incomplete becomes U+FFFD, and a sequence left
// open is dropped. The Stripper is then ready for a new stream.
func (s *Stripper) Flush(dst []byte) []byte {
	for b := s.held[:s.nheld]; len(b) > 0; {
		r, size := utf8.DecodeRune(b)
		dst = s.put(dst, r, b[:size])
		b = b[size:]
	}
	*s = Stripper{}
	return dst
}

// StripString is s through a new Stripper, flushed: text for a terminal in one piece. It returns
// s itself when there is nothing to remove.
func StripString(s string) string {
	if stripClean(s) {
		return s
	}
	var st Stripper
	out := st.Strip(make([]byte, 0, len(s)), []byte(s))
	return string(st.Flush(out))
}

// put takes one character (r, encoded as enc; an invalid byte is utf8.RuneError of one byte) and
// appends what of it shows.
func (s *Stripper) put(dst []byte, r rune, enc []byte) []byte {
	for {
		switch s.state {
		case stripText:
			switch {
			case r == 0x1b:
				s.state = stripEsc
			case r == 0x9b:
				s.state = stripCSI
			case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
				s.state, s.n = stripString, 0
			case stripDropped(r) && !(r == '\r' && s.KeepCR):
			case r == utf8.RuneError && len(enc) == 1:
				dst = utf8.AppendRune(dst, utf8.RuneError)
			default:
				dst = append(dst, enc...)
			}
			return dst
		case stripEsc:
			switch {
			case r == '[':
				s.state = stripCSI
			case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
				s.state, s.n = stripString, 0
			case r >= 0x20 && r <= 0x2f:
				s.state = stripIntermed
			case r == 0x1b:
				// ESC ESC: the first one stands alone; still after an ESC.
			case r >= 0x30 && r <= 0x7e:
				s.state = stripText // a two-character sequence such as ESC 7 or ESC M
			default:
				s.state = stripText // not a sequence: r is text (or a control) after a stray ESC
				continue
			}
			return dst
		case stripCSI:
			switch {
			case r >= 0x40 && r <= 0x7e:
				s.state = stripText // the final byte
			case r >= 0x20 && r <= 0x3f:
				// a parameter or intermediate byte
			case r == 0x1b:
				s.state = stripEsc
			default:
				s.state = stripText // malformed: read r as what follows the sequence
				continue
			}
			return dst
		case stripIntermed:
			switch {
			case r >= 0x20 && r <= 0x2f:
			case r >= 0x30 && r <= 0x7e:
				s.state = stripText
			case r == 0x1b:
				s.state = stripEsc
			default:
				s.state = stripText
				continue
			}
			return dst
		case stripString:
			s.n += len(enc)
			switch {
			case r == 0x07 || r == 0x9c:
				s.state = stripText
			case r == 0x1b:
				s.state = stripStringEsc
			case s.n > maxStripString:
				s.state = stripText
			}
			return dst
		default: // stripStringEsc
			if r == '\\' {
				s.state = stripText
			} else {
				s.state = stripString
			}
			return dst
		}
	}
}

// plainASCII reports the bytes that always pass as they are in text.
func plainASCII(b byte) bool { return (b >= 0x20 && b < 0x7f) || b == '\n' || b == '\t' }

// stripDropped reports the characters removed wherever they are: C0 controls but newline and
// tab, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates.
func stripDropped(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\n' && r != '\t'
	case r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// stripClean reports whether StripString would return s unchanged.
func stripClean(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if !plainASCII(c) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || stripDropped(r) {
			return false
		}
		i += size
	}
	return true
}
