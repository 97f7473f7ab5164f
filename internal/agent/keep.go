package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/qkit-cli/qkit/internal/output"
)

// keeper keeps the first limit bytes of a stream and counts the rest.
type keeper struct {
	limit int64 // 0: keep everything
	buf   []byte
	total int64
}

func (k *keeper) Write(p []byte) { keep(k, p) }

// WriteString is Write for a string (the parser's message text), without a copy.
func (k *keeper) WriteString(p string) { keep(k, p) }

func keep[T string | []byte](k *keeper, p T) {
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

// finish fills res from what was kept: Output (the kept reply, cut where Cap cuts, then the
// notices), Notice, Truncated, OriginalSize and, when timeout is not 0 (the configured limit of
// a run that hit it), TimedOut. The cut and the timeout are logged as warnings on log (nil: not
// logged): one rule for both backends (Run and Reply).
func (k *keeper) finish(res *Result, limit int64, timeout time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	body := k.body()
	res.OriginalSize = k.total
	var notice string
	if k.truncated() {
		res.Truncated = true
		notice += truncationNotice(limit, k.total, len(body))
		log.Warn("agent response truncated", "original_bytes", k.total, "kept_bytes", len(body), "limit", limit)
	}
	if timeout > 0 {
		res.TimedOut = true
		notice += timeoutNotice(timeout)
		log.Warn("agent timed out", "timeout", timeout, "output_bytes", k.total)
	}
	res.Notice = notice
	res.Output = string(body) + notice
}

// CutPoint returns where to cut text that was stopped at the size limit. It is output.CutPoint: the
// one truncation rule shared with internal commands (see /work/notes/shared-truncation.md).
func CutPoint(text []byte) int { return output.CutPoint(text) }

// truncationNotice is appended to a truncated reply: output's notice, the same for every front end.
func truncationNotice(limit, original int64, kept int) string {
	return (&output.Truncation{Original: original, Kept: int64(kept), Limit: limit}).Notice()
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
