package sessionrec

import (
	"fmt"
	"strings"
)

// HistoryBytes is how much of a session's transcript goes before a prompt (WithHistory's budget)
// when the agent cannot resume the session itself: half of context.max_tokens (maxTokens, at least
// 1), counted as 4 bytes a token. Every door puts history before a prompt by this one budget.
func HistoryBytes(maxTokens int) int { return max(maxTokens, 1) * 4 / 2 }

// WithHistory puts the session's earlier turns before prompt, so q (which keeps one conversation per
// folder, not per ACP session) sees this session's conversation. Oldest messages are dropped first
// to keep the history within budget bytes; it returns the text and the number of messages kept.
func WithHistory(history []Message, prompt string, budget int) (string, int) {
	start, size := len(history), 0
	for start > 0 {
		m := history[start-1]
		n := len(ReplyText(m)) + 16
		if size+n > budget {
			break
		}
		size += n
		start--
	}
	// Keep whole turns: a reply without its question confuses more than it helps.
	if start < len(history) && history[start].Role == RoleAgent {
		start++
	}
	kept := history[start:]
	if len(kept) == 0 {
		return prompt, 0
	}
	var b strings.Builder
	b.WriteString("--- CONVERSATION SO FAR ---\n")
	for _, m := range kept {
		who := "User"
		if m.Role == RoleAgent {
			who = "Assistant"
		}
		// A reply with how it ended, in the same words whichever door the turn came through: the
		// model is told a reply was cut, rather than reading qkit's notice as the agent's words.
		fmt.Fprintf(&b, "%s: %s\n\n", who, strings.TrimRight(ReplyText(m), "\n"))
	}
	b.WriteString("--- END OF CONVERSATION SO FAR ---\n\n")
	b.WriteString(prompt)
	return b.String(), len(kept)
}
