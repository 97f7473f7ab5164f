//go:build !linux

package questions

// watchExit cannot watch a process here: claims by local terminals are looked at again every
// localClaimRecheck instead.
func watchExit(Process, func()) (stop func(), ok bool) { return nil, false }
