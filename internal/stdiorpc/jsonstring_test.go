package stdiorpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendJSONString checks the string encoder against encoding/json: the same value, on one line.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\"\\", "\x00\x1f\x7f", "\u2028", "\xff\xfe", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendJSONString(nil, s)
		if bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("%q encodes across lines: %s", s, out)
		}
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, out, err)
		}
		want, _ := json.Marshal(s)
		var w string
		_ = json.Unmarshal(want, &w)
		if got != w {
			t.Fatalf("%q: decodes to %q, encoding/json gives %q", s, got, w)
		}
	})
}
