package sessions

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads an age as prune --older-than and list --since take it: a Go duration (36h, 90m)
// or a whole number of days (30d) or weeks (2w). Zero and negative ages are refused.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if unit := strings.TrimLeft(s, "0123456789"); (unit == "d" || unit == "w") && len(unit) < len(s) {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil || n > 100*366 {
			return 0, fmt.Errorf("invalid age %q: too large", s)
		}
		d = time.Duration(n) * 24 * time.Hour
		if unit == "w" {
			d *= 7
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("invalid age %q: expected a duration such as 36h, 30d or 2w", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("invalid age %q: it must be more than zero", s)
	}
	return d, nil
}

// ParseSince reads list --since: an age (ParseAge, counted back from now) or a date (2006-01-02,
// local midnight) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	d, err := ParseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid --since %q: expected an age (36h, 30d, 2w), a date (2025-01-31) or an RFC 3339 time", s)
	}
	return now.Add(-d), nil
}
