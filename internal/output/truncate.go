package output

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// truncateWindow is how far before the limit a line break is looked for.
const truncateWindow = 100

// Truncation describes a cut made by Cap or CapHead.
type Truncation struct {
	Original int64 // bytes before the cut
	Kept     int64 // bytes kept, without the notice
	Limit    int64 // the limit that was exceeded
}

// Notice is the text appended to a cut output, the same for every front end:
// "\n\n[RESPONSE TRUNCATED: Output exceeded 2.0MB limit. Original: N, Truncated: M]".
func (t *Truncation) Notice() string {
	return fmt.Sprintf("\n\n[RESPONSE TRUNCATED: Output exceeded %s limit. Original: %d, Truncated: %d]",
		FormatLimit(t.Limit), t.Original, t.Kept)
}

// Warning is the line callers log when they truncate.
func (t *Truncation) Warning() string {
	return fmt.Sprintf("response truncated from %d bytes to %d bytes due to size limit", t.Original, t.Kept)
}

// FormatLimit shows a byte limit as the peer does: %.1fMB from 1 MiB, %.1fKB from 1 KiB, else %dB.
func FormatLimit(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// Cap limits s to limit bytes. When s is longer it is cut at the last line break within 100 bytes
// before the limit (the break dropped), otherwise at the limit, never inside a UTF-8 sequence, and
// the notice is appended. The Truncation is nil when nothing was cut. A limit <= 0 means no limit.
func Cap(s string, limit int64) (string, *Truncation) {
	if limit <= 0 || int64(len(s)) <= limit {
		return s, nil
	}
	return CapHead([]byte(s[:limit]), int64(len(s)), limit)
}

// CapHead is Cap for a stream of which only the head was kept: head holds the first bytes (at least
// min(total, limit) of them) and total counts every byte of the stream.
func CapHead(head []byte, total, limit int64) (string, *Truncation) {
	if limit <= 0 || total <= limit {
		if int64(len(head)) > total {
			head = head[:total]
		}
		return string(head), nil
	}
	if int64(len(head)) > limit {
		head = head[:limit]
	}
	cut := CutPoint(head)
	t := &Truncation{Original: total, Kept: int64(cut), Limit: limit}
	return string(head[:cut]) + t.Notice(), t
}

// CutHoldBack is what a stream shown as it arrives holds back near the size limit, so that what
// was shown never goes past where CutPoint cuts: the 100-byte window of the cut, a "\r\n" and a
// UTF-8 character. ask's stream, acp serve's text path and its proxy hold back as much.
const CutHoldBack = 128

// CutPoint returns where to cut text that was stopped at the size limit (len(text) is the limit): at
// the last line break within the last 100 bytes (the break itself dropped, a "\r\n" whole), otherwise
// at the limit moved back to the start of a UTF-8 character that did not fit whole.
func CutPoint(text []byte) int {
	n := len(text)
	for i := n - 1; i >= 0 && i >= n-truncateWindow; i-- {
		if text[i] == '\n' || text[i] == '\r' {
			if text[i] == '\n' && i > 0 && text[i-1] == '\r' {
				i--
			}
			return i
		}
	}
	if n == 0 {
		return 0
	}
	i := n - 1
	for i > 0 && n-i < utf8.UTFMax && !utf8.RuneStart(text[i]) {
		i--
	}
	if !utf8.FullRune(text[i:]) {
		return i
	}
	return n
}

// HeadBuffer is an io.Writer that keeps the first Limit bytes written and only counts the rest, so
// memory stays flat whatever a producer prints. It is safe for concurrent use.
type HeadBuffer struct {
	mu    sync.Mutex
	limit int64
	head  []byte
	total int64
}

// NewHeadBuffer returns a HeadBuffer keeping at most limit bytes (limit <= 0 keeps everything).
func NewHeadBuffer(limit int64) *HeadBuffer { return &HeadBuffer{limit: limit} }

// Write keeps what fits under the limit and counts everything.
func (b *HeadBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	room := int64(len(p))
	if b.limit > 0 {
		room = min(room, b.limit-int64(len(b.head)))
	}
	if room > 0 {
		b.head = append(b.head, p[:room]...)
	}
	return len(p), nil
}

// Total is the number of bytes written, kept or not.
func (b *HeadBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Capped returns what was written with the limit applied as Cap does.
func (b *HeadBuffer) Capped() (string, *Truncation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return CapHead(b.head, b.total, b.limit)
}

// Head returns a copy of the bytes kept, without any cut or notice.
func (b *HeadBuffer) Head() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.head...)
}
