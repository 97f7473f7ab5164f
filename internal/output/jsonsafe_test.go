package output

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestTerminalSafeJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"plain € 日本"}`:                               `{"a":"plain € 日本"}`,
		"{\"a\":\"csi\u009b2J\"}":                          `{"a":"csi\u009b2J"}`,
		"{\"a\":\"osc\u009d0;t\u009c\"}":                   `{"a":"osc\u009d0;t\u009c"}`,
		"{\"a\":\"\u0080\u009f\"}":                         `{"a":"\u0080\u009f"}`,
		"[\"\u202aa\u202e\",\"\u2066\u2069\u2028\u200f\"]": "[\"\\u202aa\\u202e\",\"\\u2066\\u2069\u2028\u200f\"]",
	} {
		if got := string(TerminalSafeJSON([]byte(in))); got != want {
			t.Errorf("TerminalSafeJSON(%q) = %q, want %q", in, got, want)
		}
	}
	clean := []byte(`{"a":"nothing to do"}`)
	if got := TerminalSafeJSON(clean); &got[0] != &clean[0] {
		t.Error("clean JSON was copied")
	}
}

func TestJSONEscapesTerminalControls(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, map[string]string{"output": "x\u009b2J\u202ey<&>"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"output\": \"x\\u009b2J\\u202ey<&>\"\n}\n"; buf.String() != want {
		t.Fatalf("%q, want %q", buf.String(), want)
	}
}

// FuzzTerminalSafeJSON: whatever string a value holds, the escaped JSON decodes to the same value
// and holds no C1 or bidirectional control raw.
func FuzzTerminalSafeJSON(f *testing.F) {
	f.Add("csi\u009b2J osc\u009d0;t\u009c bidi\u202e\u2066 € 日本")
	f.Add("\x00\x1b[31m\xff")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal([]any{s, map[string]string{s: s}})
		if err != nil {
			t.Skip()
		}
		safe := TerminalSafeJSON(b)
		if strings.ContainsFunc(string(safe), jsonUnsafe) {
			t.Fatalf("%q: raw control left in %q", s, safe)
		}
		var before, after any
		if err := json.Unmarshal(b, &before); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(safe, &after); err != nil {
			t.Fatalf("%q: %v in %q", s, err, safe)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q: decoded %q, want %q", s, after, before)
		}
	})
}
