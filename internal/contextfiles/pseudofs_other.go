//go:build !linux

package contextfiles

import "os"

// pseudoFS names the pseudo file system the folder whose real path is real lies on, or "". Without
// Linux's statfs magic numbers, it goes by the places such file systems are mounted.
func pseudoFS(_ *os.File, real string, _ *mountTable) string {
	for _, p := range []struct{ dir, kind string }{{"/proc", "proc"}, {"/sys", "sysfs"}, {"/dev", "dev"}} {
		if _, in := within(p.dir, real); in {
			return p.kind
		}
	}
	return ""
}
