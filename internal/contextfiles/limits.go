package contextfiles

import "time"

// WalkLimits bound one walk: the folders a glob rule (or several sharing a base folder) crosses.
// A walk that reaches a limit stops, and its rules take no file, with a warning that names the rule
// and the limit: a rule such as '/**' or 'node_modules/**' must not hold up every prompt.
type WalkLimits struct {
	// MaxFiles is how many files and folders the walk may look at (<= 0: no limit).
	MaxFiles int
	// Timeout is how long the walk may take (<= 0: no limit).
	Timeout time.Duration
}

// The default limits, and the settings that change them (internal/config's keys carry the same
// defaults; a test holds them together).
const (
	DefaultWalkMaxFiles = 200_000
	DefaultWalkTimeout  = 10 * time.Second
	SettingWalkMaxFiles = "context.walk_max_files"
	SettingWalkTimeout  = "context.walk_timeout"
)

// DefaultWalkLimits are the limits of a Store that was given none.
var DefaultWalkLimits = WalkLimits{MaxFiles: DefaultWalkMaxFiles, Timeout: DefaultWalkTimeout}
