//go:build unix

package contextfiles

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// TestClearCalledOffWhileWaiting: `context clear` interrupted while another process holds the
// profile's lock clears nothing, even once the lock frees (it reported exit 130 and then cleared).
func TestClearCalledOffWhileWaiting(t *testing.T) {
	s, _ := newTestStore(t)
	def := Target{Profile: DefaultProfile}
	path := s.configPath(def)
	write(t, path, `{"paths": ["a.md", "b.md"]}`+"\n")
	held, err := filestore.LockFor(path, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("interrupt received")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Clear(ctx, def)
		done <- err
	}()
	cancel(stop)
	held.Unlock()
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Clear = %v, want the interrupt", err)
	}
	if rules, err := s.Rules(def); err != nil || len(rules) != 2 {
		t.Fatalf("the profile holds %v (%v) after an interrupted clear, want both rules", rules, err)
	}
}

// TestConfigThatIsAFIFO: a profile, the global config or the active-profile file that is a FIFO
// (made in the test's folder) is refused with its name and kind, by reads and by changes, and
// left in place: `context show` hung on it, and `context clear` past every signal but SIGKILL.
func TestConfigThatIsAFIFO(t *testing.T) {
	s, work := newTestStore(t)
	write(t, filepath.Join(work, "a.md"), "a\n")
	for _, target := range []Target{{Profile: DefaultProfile}, {Global: true}} {
		path := s.configPath(target)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		want := "context config " + path + " is a FIFO, not a regular file"
		if _, err := s.Rules(target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Rules(%s) = %v, want %q", target.Scope(), err, want)
		}
		if _, err := s.Clear(context.Background(), target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Clear(%s) = %v, want %q", target.Scope(), err, want)
		}
		if _, err := s.Add(context.Background(), target, []string{"a.md"}, AddOptions{Cwd: work}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Add(%s) = %v, want %q", target.Scope(), err, want)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("the FIFO was replaced: %v %v", fi, err)
		}
	}
	if err := syscall.Mkfifo(s.activePath(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Active(); err == nil || !strings.Contains(err.Error(), s.activePath()+" is a FIFO") {
		t.Errorf("Active = %v", err)
	}
}
