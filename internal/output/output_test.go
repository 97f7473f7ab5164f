package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{UsageErrorf("bad"), 2},
		{fmt.Errorf("wrapped: %w", NotFoundf("gone")), 4},
		{Errorf(3, "no"), 3},
		{fmt.Errorf("run: %w", context.DeadlineExceeded), 124},
		{context.Canceled, 130},
		{SilentError{Code: 124}, 124},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestTSV(t *testing.T) {
	var b bytes.Buffer
	if err := TSV(&b, [][]string{{"a", "1\t2"}, {"b", "x"}}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "a\t1 2\nb\tx\n" {
		t.Fatalf("got %q", b.String())
	}
}

func TestPalette(t *testing.T) {
	if (Palette{}).Red("x") != "x" {
		t.Fatal("disabled palette coloured text")
	}
	if (Palette{Enabled: true}).Red("x") == "x" {
		t.Fatal("enabled palette did not colour")
	}
}
