package agent

import (
	"fmt"
	"unicode/utf8"
)

// keeper keeps the first limit bytes of a stream and counts the rest.
type keeper struct {
	limit int64 // 0: keep everything
	buf   []byte
	total int64
}

func (k *keeper) Write(p []byte) {
	k.total += int64(len(p))
	if k.limit > 0 {
		room := k.limit - int64(len(k.buf))
		if room <= 0 {
			return
		}
		if int64(len(p)) > room {
			p = p[:room]
		}
	}
	k.buf = append(k.buf, p...)
}

// truncated reports whether more arrived than was kept.
func (k *keeper) truncated() bool { return k.limit > 0 && k.total > k.limit }

// body returns the kept text, cut when the stream exceeded the limit.
func (k *keeper) body() []byte {
	if !k.truncated() {
		return k.buf
	}
	return k.buf[:CutPoint(k.buf)]
}

// CutPoint returns where to cut text that was stopped at the size limit (len(text) is the limit):
// at the last line break within the last 100 bytes (the break itself is dropped), otherwise at the
// limit moved back to the start of a UTF-8 character that did not fit whole.
func CutPoint(text []byte) int {
	n := len(text)
	for i := n - 1; i >= 0 && i >= n-100; i-- {
		if text[i] == '\n' || text[i] == '\r' {
			if text[i] == '\n' && i > 0 && text[i-1] == '\r' {
				i-- // drop a whole "\r\n"
			}
			return i
		}
	}
	if n == 0 {
		return 0
	}
	// No line break near the limit: do not split a character.
	i := n - 1
	for i > 0 && n-i < utf8.UTFMax && !utf8.RuneStart(text[i]) {
		i--
	}
	if !utf8.FullRune(text[i:]) {
		return i
	}
	return n
}

// truncationNotice is appended to a truncated reply (the wording of the peer tool the seed
// describes).
func truncationNotice(limit, original int64, kept int) string {
	return fmt.Sprintf("\n\n[RESPONSE TRUNCATED: Output exceeded %s limit. Original: %d, Truncated: %d]", formatLimit(limit), original, kept)
}

func formatLimit(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// timeoutNotice is appended to the partial reply of a run that hit its timeout.
func timeoutNotice(d interface{ Seconds() float64 }) string {
	return fmt.Sprintf("\n\n[TIMED OUT: the agent hit the configured timeout of %s seconds (AGENT_TIMEOUT); the output above may be incomplete]", trimFloat(d.Seconds()))
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
