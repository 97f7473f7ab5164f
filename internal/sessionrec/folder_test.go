package sessionrec

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSameFolder(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	other := filepath.Join(root, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	gone := filepath.Join(root, "gone")
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{real, real, true},
		{real, real + "/", true},
		{real, filepath.Join(other, "..", "real"), true},
		{link, real, true},
		{real, link, true},
		{real, other, false},
		{link, other, false},
		{gone, gone, true}, // a folder that is gone is still its own (sessions list --cwd of it)
		{gone, real, false},
		{real, gone, false},
	} {
		if got := SameFolder(tc.a, tc.b); got != tc.want {
			t.Errorf("SameFolder(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
