//go:build !linux

package lifecycle

import (
	"github.com/qkit-cli/qkit/internal/questions"
)

// watchExit cannot watch a process here: claims by local terminals are looked at again every
// localClaimRecheck instead.
func watchExit(questions.Process, func()) (stop func(), ok bool) { return nil, false }
