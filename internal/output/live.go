package output

import "unicode/utf8"

// Live measures a reply shown as it arrives against the size limit its runner cuts it to (Cap):
// ask's stdout, acp serve's text path and its proxy show the agent's text this way. Text goes out
// as it comes until CutHoldBack bytes before the limit, since where the runner cuts (a line break
// within the last 100 bytes) is known only once more text arrives. From the first chunk that does
// not fit, nothing more goes out, so what was shown is always a prefix of the reply the runner
// keeps; Rest is what of that reply is still to show when the run ends. A chunk cut at the hold-back
// point is cut at the start of a UTF-8 character, so a stream of whole characters is never shown
// half of one. The zero Live has no limit.
type Live struct {
	capped  bool
	room    int64 // the bytes that may be shown as they arrive, when capped
	shown   int64
	holding bool
}

// NewLive is a Live for a reply cut to limit bytes (limit <= 0: no limit).
func NewLive(limit int64) Live {
	if limit <= 0 {
		return Live{}
	}
	return Live{capped: true, room: max(limit-CutHoldBack, 0)}
}

// Show is how much of chunk, from its start, may be shown now; the caller shows that much.
func (l *Live) Show(chunk string) int { return show(l, chunk) }

// ShowBytes is Show for a chunk of bytes.
func (l *Live) ShowBytes(chunk []byte) int { return show(l, chunk) }

// Whole reports whether all of chunk may be shown now: a front that passes chunks on unchanged
// (the proxy) shows a chunk whole or not at all.
func (l *Live) Whole(chunk string) bool {
	if l.holding || (l.capped && l.shown+int64(len(chunk)) > l.room) {
		l.holding = true
		return false
	}
	l.shown += int64(len(chunk))
	return true
}

// Shown is how many bytes were shown.
func (l *Live) Shown() int64 { return l.shown }

// Rest is what of the reply the runner kept is still to show: all of kept past what was shown.
func (l *Live) Rest(kept string) string {
	if l.shown >= int64(len(kept)) {
		return ""
	}
	return kept[l.shown:]
}

func show[T string | []byte](l *Live, chunk T) int {
	if l.holding {
		return 0
	}
	n := len(chunk)
	if l.capped && l.shown+int64(n) > l.room {
		l.holding = true
		n = int(l.room - l.shown)
		for n > 0 && !utf8.RuneStart(chunk[n]) {
			n--
		}
	}
	l.shown += int64(n)
	return n
}
