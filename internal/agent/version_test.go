package agent

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

func TestParseVersion(t *testing.T) {
	cases := []struct {
		out  string
		want Version
		ok   bool
	}{
		{"q 1.19.7\n", Version{Text: "q 1.19.7", Number: "1.19.7", Flavour: FlavourQ}, true},
		{"kiro-cli 2.21.2\n", Version{Text: "kiro-cli 2.21.2", Number: "2.21.2", Flavour: FlavourKiro}, true},
		{"\n  qchat v1.12.6 \n", Version{Text: "qchat v1.12.6", Number: "1.12.6", Flavour: FlavourQ}, true},
		{"Kiro CLI 1.25.0-beta.1\nmore\n", Version{Text: "Kiro CLI 1.25.0-beta.1", Number: "1.25.0-beta.1", Flavour: FlavourKiro}, true},
		{"\x1b[32mq 1.19.7\x1b[0m", Version{Text: "q 1.19.7", Number: "1.19.7", Flavour: FlavourQ}, true},
		{"my-agent 0.3", Version{Text: "my-agent 0.3", Number: "0.3", Flavour: ""}, true},
		{"quux 1.0", Version{Text: "quux 1.0", Number: "1.0", Flavour: ""}, true},
		{"usage: q [OPTIONS]", Version{Text: "usage: q [OPTIONS]"}, false},
		{"build2.0", Version{Text: "build2.0"}, false},
		{"", Version{}, false},
	}
	for _, c := range cases {
		got, ok := ParseVersion(c.out)
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %+v %v, want %+v %v", c.out, got, ok, c.want, c.ok)
		}
	}
	if v := (Version{Number: "2.21.2"}); v.Major() != "2" {
		t.Errorf("major of 2.21.2: %q", v.Major())
	}
	long, _ := ParseVersion("q 1.0 " + strings.Repeat("é", 200))
	if !strings.HasSuffix(long.Text, "…") || len(long.Text) > maxVersionText+len("…") || !utf8.ValidString(long.Text) {
		t.Errorf("a long line is kept as %q", long.Text)
	}
}

func FuzzParseVersion(f *testing.F) {
	f.Add("q 1.19.7\n")
	f.Add("kiro-cli 2.21.2")
	f.Add("\x1b]0;title\x07v1.2.3-rc.1+build")
	f.Fuzz(func(t *testing.T, out string) {
		v, ok := ParseVersion(out)
		if ok != (v.Number != "") || !utf8.ValidString(v.Text) || strings.ContainsAny(v.Text, "\n\x1b\x07") {
			t.Fatalf("%q: %+v %v", out, v, ok)
		}
		if ok && !strings.Contains(v.Text, v.Number) {
			t.Fatalf("%q: number %q is not in %q", out, v.Number, v.Text)
		}
		if len(v.Text) > maxVersionText+len("…") {
			t.Fatalf("%q: text of %d bytes", out, len(v.Text))
		}
	})
}

func TestReadVersion(t *testing.T) {
	for flavour, want := range map[string]Version{
		"q":    {Text: "q 1.19.7", Number: "1.19.7", Flavour: FlavourQ},
		"kiro": {Text: "kiro-cli 2.21.2", Number: "2.21.2", Flavour: FlavourKiro},
	} {
		got, err := ReadVersion(t.Context(), fakeqtest.Flavour(t, flavour))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v", flavour, got, err)
		}
	}
	_, err := ReadVersion(t.Context(), fakeqtest.Flavour(t, "q", "FAKEQ_VERSION=no version here"))
	if err == nil || !strings.Contains(err.Error(), `printed no version: "no version here"`) {
		t.Errorf("no number: %v", err)
	}
	var missing *MissingCommandError
	if _, err := ReadVersion(t.Context(), "qkit-no-such-agent"); !errors.As(err, &missing) {
		t.Errorf("missing: %v", err)
	}
}
