//go:build !unix

package dirstore

import (
	"testing"
)

// plantSpecial plants nothing off unix: FIFOs and /dev/zero are unix.
func plantSpecial(*testing.T, string, uint8) {}

// notBlocked runs fn.
func notBlocked(_ *testing.T, _ string, fn func()) { fn() }
