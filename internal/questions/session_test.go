package questions

import (
	"testing"
	"time"
)

func TestSessionAgeHeaderSource(t *testing.T) {
	asked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Session{ID: "0123456789abcdef", Status: Status{CreatedAt: asked},
		Request: &Request{Source: "mcp", Questions: []Question{{Header: "Language"}, {Header: "Extras"}}}}
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{-time.Second, "0s"}, {45 * time.Second, "45s"}, {12 * time.Minute, "12m"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"}} {
		if got := s.Age(asked.Add(c.after)); got != c.want {
			t.Errorf("Age after %v = %q, want %q", c.after, got, c.want)
		}
	}
	if s.Header() != "Language" || s.Source() != "mcp" {
		t.Errorf("Header, Source = %q, %q; want Language, mcp", s.Header(), s.Source())
	}
	unreadable := &Session{ID: "0123456789abcdef"}
	if unreadable.Header() != "" || unreadable.Source() != "" {
		t.Errorf("unreadable request: Header, Source = %q, %q; want empty", unreadable.Header(), unreadable.Source())
	}
}
