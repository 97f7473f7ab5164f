package agent

// stripper removes ANSI escape sequences from a stream. It keeps its state between calls, so a
// sequence split across two reads is still removed whole.
type stripper struct {
	state int
	n     int // bytes of the current string sequence (OSC, DCS, ...)
}

const (
	stNormal    = iota
	stEsc       // after ESC
	stCSI       // after ESC [
	stIntermed  // after ESC and intermediate bytes, e.g. ESC ( before B
	stString    // OSC, DCS, SOS, PM, APC: up to BEL or ESC \
	stStringEsc // ESC inside a string: ST if the next byte is '\'
)

// maxStringSeq bounds an unterminated OSC or DCS string; past it the text shows again.
const maxStringSeq = 4096

// Strip appends p without its escape sequences to dst.
func (s *stripper) Strip(dst, p []byte) []byte {
	for _, b := range p {
		switch s.state {
		case stNormal:
			if b == 0x1b {
				s.state = stEsc
				continue
			}
			dst = append(dst, b)
		case stEsc:
			switch {
			case b == '[':
				s.state = stCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				s.state, s.n = stString, 0
			case b >= 0x20 && b <= 0x2f:
				s.state = stIntermed
			case b == 0x1b:
				// ESC ESC: the first one stands alone; stay after an ESC.
			case b >= 0x30 && b <= 0x7e:
				s.state = stNormal // a two-byte sequence such as ESC 7 or ESC M
			default:
				s.state = stNormal
				dst = append(dst, b) // a control byte or text after a stray ESC
			}
		case stCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				s.state = stNormal // final byte
			case b >= 0x20 && b <= 0x3f:
				// parameter or intermediate byte
			case b == 0x1b:
				s.state = stEsc
			default:
				s.state = stNormal // malformed: show what follows
				dst = append(dst, b)
			}
		case stIntermed:
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b >= 0x30 && b <= 0x7e:
				s.state = stNormal
			case b == 0x1b:
				s.state = stEsc
			default:
				s.state = stNormal
				dst = append(dst, b)
			}
		case stString:
			s.n++
			switch {
			case b == 0x07:
				s.state = stNormal
			case b == 0x1b:
				s.state = stStringEsc
			case s.n > maxStringSeq:
				s.state = stNormal
			}
		case stStringEsc:
			if b == '\\' {
				s.state = stNormal
			} else {
				s.state = stString
			}
		}
	}
	return dst
}
