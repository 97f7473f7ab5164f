package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapUnderLimitUnchanged(t *testing.T) {
	s := "hello\nworld\n"
	got, tr := Cap(s, 1024)
	if got != s || tr != nil {
		t.Fatalf("Cap = %q, %v; want unchanged", got, tr)
	}
}

func TestCapCutsAtLineBreakWithinWindow(t *testing.T) {
	line := strings.Repeat("a", 49) + "\n" // 50 bytes
	s := strings.Repeat(line, 100)         // 5000 bytes
	got, tr := Cap(s, 1024)
	if tr == nil {
		t.Fatal("not truncated")
	}
	// 1024 = 20*50 + 24: the last break before 1024 is at index 999 (within 100 bytes).
	want := strings.Repeat(line, 19) + strings.Repeat("a", 49)
	if !strings.HasPrefix(got, want+"\n\n[RESPONSE TRUNCATED:") {
		t.Fatalf("cut at the wrong place: %q", got[len(got)-120:])
	}
	if tr.Original != 5000 || tr.Kept != int64(len(want)) {
		t.Fatalf("truncation = %+v", tr)
	}
	if !strings.HasSuffix(got, "[RESPONSE TRUNCATED: Output exceeded 1.0KB limit. Original: 5000, Truncated: 999]") {
		t.Fatalf("notice: %q", got[len(want):])
	}
}

func TestCapNoBreakCutsAtLimitOnRuneBoundary(t *testing.T) {
	s := strings.Repeat("é", 1000) // 2 bytes each
	got, tr := Cap(s, 1025)
	if tr == nil || tr.Kept != 1024 {
		t.Fatalf("truncation = %+v", tr)
	}
	if !utf8.ValidString(got) {
		t.Fatal("cut inside a UTF-8 sequence")
	}
}

func TestFormatLimit(t *testing.T) {
	for n, want := range map[int64]string{2 << 20: "2.0MB", 1536: "1.5KB", 10: "10B"} {
		if got := FormatLimit(n); got != want {
			t.Errorf("FormatLimit(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHeadBufferKeepsHeadAndCounts(t *testing.T) {
	b := NewHeadBuffer(2000)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 1000 {
		_, _ = b.Write(line)
	}
	if b.Total() != 100000 {
		t.Fatalf("total = %d", b.Total())
	}
	got, tr := b.Capped()
	if tr == nil || tr.Original != 100000 || tr.Kept != 1999 {
		t.Fatalf("truncation = %+v", tr)
	}
	if len(got) > 2000+200 {
		t.Fatalf("kept too much: %d", len(got))
	}
}

func FuzzCap(f *testing.F) {
	f.Add("hello\nworld", int64(5))
	f.Add(strings.Repeat("日本語\n", 100), int64(150))
	f.Fuzz(func(t *testing.T, s string, limit int64) {
		limit = limit % 4096
		got, tr := Cap(s, limit)
		if tr == nil {
			if got != s {
				t.Fatalf("changed without truncation")
			}
			return
		}
		if tr.Kept > limit || tr.Kept < 0 || !strings.HasPrefix(s, got[:tr.Kept]) {
			t.Fatalf("bad cut %+v", tr)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("cut inside a UTF-8 sequence")
		}
	})
}
