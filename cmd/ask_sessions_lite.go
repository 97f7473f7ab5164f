//go:build qkit_lite

package cmd

import "context"

// sessionCompletions hands ask --session's completion to qkit-full, which replaces this process
// and answers it from the session store (SQLite, which the light build does not link). Without
// qkit-full there is nothing to offer.
func sessionCompletions(context.Context, string, string, string) []string {
	_ = forwardToFull()
	return nil
}
