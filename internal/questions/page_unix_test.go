//go:build unix

package questions

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFindPageNeverReadsAFIFO: a FIFO or a link to /dev/zero at the served-page record is not
// read (a blocked read hung every MCP question before), and no page is reported.
func TestFindPageNeverReadsAFIFO(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"fifo":              func(path string) error { return syscall.Mkfifo(path, 0o600) },
		"link to /dev/zero": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			if err := plant(filepath.Join(state, runningFile)); err != nil {
				t.Skip(err)
			}
			done := make(chan bool, 1)
			go func() { _, ok := FindPage(state); done <- ok }()
			select {
			case ok := <-done:
				if ok {
					t.Fatal("a page was reported")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("FindPage is blocked on the record")
			}
		})
	}
}
