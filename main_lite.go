//go:build qkit_lite

package main

// The light build hands the commands it forwards whole to qkit-full as early as its start allows
// (package early's init).
import _ "github.com/qkit-cli/qkit/internal/fullbin/early"
