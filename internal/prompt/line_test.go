package prompt

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestConfirmLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		def  bool
		want bool
		out  string
	}{
		{"y\n", false, true, `Run "qkit context add notes.md"? [y/N] `},
		{"YES\r\n", false, true, `Run "qkit context add notes.md"? [y/N] `},
		{"n\n", true, false, `Run "qkit context add notes.md"? [Y/n] `},
		{"\n", false, false, `Run "qkit context add notes.md"? [y/N] `},
		{"\n", true, true, `Run "qkit context add notes.md"? [Y/n] `},
		{"", false, false, "Run \"qkit context add notes.md\"? [y/N] \n"},
		{"maybe\ny\n", false, true, "Run \"qkit context add notes.md\"? [y/N] Please answer y or n.\nRun \"qkit context add notes.md\"? [y/N] "},
	} {
		var out strings.Builder
		in := strings.NewReader(tc.in + "left for the next reader")
		got, err := ConfirmLine(context.Background(), in, &out, `Run "qkit context add notes.md"?`, tc.def)
		if err != nil || got != tc.want || out.String() != tc.out {
			t.Errorf("%q (default %v): %v, %v, printed %q; want %v, %q", tc.in, tc.def, got, err, out.String(), tc.want, tc.out)
		}
		if rest, _ := io.ReadAll(in); tc.in != "" && string(rest) != "left for the next reader" {
			t.Errorf("%q: read past the answer's line; left %q", tc.in, rest)
		}
	}
}

func TestConfirmLineInterrupted(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out strings.Builder
	if ok, err := ConfirmLine(ctx, r, &out, "Run?", false); ok || !errors.Is(err, ErrInterrupted) {
		t.Fatalf("got %v, %v; want ErrInterrupted", ok, err)
	}
}
