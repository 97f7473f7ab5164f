// Package early hands `qkit mcp serve` and the other commands the light binary forwards whole to
// qkit-full from its init, before Go has run the init of most packages the light binary links.
//
// Go runs every linked package's init before main: at each step, the first package in import-path
// order whose imports are all initialised. This package imports only fullbin and os, and fullbin
// only errors, os and syscall, so its init runs right after os's, before crypto, reflect, unicode,
// x/text, viper, cobra, survey, yaml, net/http and qkit's own packages (importing even strings
// would hold it behind all the packages before "strings" in that order). Measured with /bin/true as
// the helper (150 interleaved runs, medians, /bin/true's own 1.0 ms taken off): the light binary's
// part of `qkit mcp serve`, what every MCP client starts, went from 3.7 ms to 2.4 (a Go
// hello-world: 1.0).
//
// Only the plainest command line is handed over here: its first word is one of fullbin.Commands.
// Anything else (a global flag first, `help mcp`, completion) goes through cmd.Main, which decides
// on the whole command line (forwardsWhole) and hands over the same way. When the hand-over fails
// (no helper), the init returns and cmd.Main tries again and reports why, with its exit code.
//
// The light build alone imports it (main_lite.go); the full build has nothing to hand over.
package early

import (
	"os"

	"github.com/qkit-cli/qkit/internal/fullbin"
)

func init() {
	if len(os.Args) > 1 && Forwards(os.Args[1]) {
		_ = fullbin.Exec(os.Args[1:]) // returns only on failure: cmd.Main reports it
	}
}

// Forwards reports whether a command line whose first word is word is handed over whole.
func Forwards(word string) bool {
	for _, c := range fullbin.Commands {
		if word == c {
			return true
		}
	}
	return false
}
