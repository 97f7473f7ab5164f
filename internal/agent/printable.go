package agent

import "github.com/qkit-cli/qkit/internal/termtext"

// Printable is s made safe to print in a message on a terminal: the agent's escape sequences, every
// other control character but newline and tab (C0, DEL, C1) and the bidirectional controls are
// removed, and bytes that are not UTF-8 become U+FFFD (termtext.StripString, the filter the reply
// goes through too). The agent's stderr and the error data its JSON-RPC errors carry reach the
// user's terminal through it, so they cannot move the cursor, retitle the window or leave the
// terminal in a colour.
func Printable(s string) string { return termtext.StripString(s) }
