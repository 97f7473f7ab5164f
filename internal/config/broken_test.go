package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// loadErr is the error viper gives for data, as Load sees it.
func loadErr(data []byte) error {
	v := viper.New()
	v.SetConfigType("yaml")
	return v.ReadConfig(bytes.NewReader(data))
}

// TestContentErrorNamesTheLineAtFault: YAML names the line a construct began on for some mistakes
// (line 2 for a key indented wrong on line 3); the error names the line at fault and quotes it.
func TestContentErrorNamesTheLineAtFault(t *testing.T) {
	cases := []struct {
		text string
		line int
	}{
		{"agent:\n  command: q\n timeout: 30s\n", 3},
		{"# mine\nagent:\n  command: q\n  timeout 30s\nquestions:\n  timeout: 5m\n", 4},
		{"agent:\n  command: \"q\n  timeout: 30s\n", 2},
		{"agent: [q,\n  r]\nacp:\n  enabled: true\n  x\n", 5},
		{"agent:\n\tcommand: q\n", 2},
	}
	for _, c := range cases {
		err := loadErr([]byte(c.text))
		if err == nil {
			t.Fatalf("%q loads", c.text)
		}
		fe := contentError("settings.conf", []byte(c.text), err)
		if fe.Line != c.line {
			t.Errorf("%q: line %d (%v), want %d", c.text, fe.Line, fe, c.line)
		}
		want := strings.Split(c.text, "\n")[c.line-1]
		if fe.Text != want || strings.Contains(fe.Error(), "yaml: line") {
			t.Errorf("%q: %v quotes %q, want line %d (%q) and no YAML line", c.text, fe, fe.Text, c.line, want)
		}
	}
}

// FuzzContentError: whatever a config file holds, the error for content that does not load names
// a line the file has, or none.
func FuzzContentError(f *testing.F) {
	f.Add([]byte("agent:\n  command: q\n timeout: 30s\n"))
	f.Add([]byte("agent: [q\n"))
	f.Add([]byte("\xef\xbb\xbfa: b\n c\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		err := loadErr(data)
		if err == nil {
			return
		}
		fe := contentError("c.yaml", data, err)
		lines := strings.Count(string(data), "\n") + 1
		if fe.Line < 0 || fe.Line > lines || fe.Err == nil || fe.Error() == "" {
			t.Fatalf("%q: line %d of %d: %v", data, fe.Line, lines, fe)
		}
	})
}
