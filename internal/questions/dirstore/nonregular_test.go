//go:build unix

package dirstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// notBlocked runs fn and fails the test when it has not returned after a generous while: what it
// guards against is blocking for ever on a FIFO, not slowness.
func notBlocked(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is blocked (reading a file that is not a regular file?)", what)
	}
}

// plantSpecial puts what special names in place of one of the set's files in dir: its low two bits
// pick the kind (0 nothing, 1 a FIFO, 2 a link to /dev/zero, 3 a file one byte over the limit), the
// next two bits the file (answers.json, request.json, status.json).
func plantSpecial(t *testing.T, dir string, special uint8) {
	t.Helper()
	kind := special & 3
	if kind == 0 {
		return
	}
	file := []string{AnswersFile, RequestFile, StatusFile, AnswersFile}[special>>2&3]
	path := filepath.Join(dir, file)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case 1:
		err = syscall.Mkfifo(path, 0o600)
	case 2:
		err = os.Symlink("/dev/zero", path)
	case 3:
		err = os.WriteFile(path, bytes.Repeat([]byte(" "), maxFileSize+1), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log destination safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestNonRegularAnswersAreNeverRead: an answers.json that is a FIFO, a link to /dev/zero or a file
// over the size limit is not read. Get, List and a wait return (a FIFO blocked them before), the
// warning names the file once, the set stays answerable, and an answer replaces the file.
func TestNonRegularAnswersAreNeverRead(t *testing.T) {
	plant := map[string]func(t *testing.T, path string) string{
		"fifo": func(t *testing.T, path string) string {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
			return "answers.json is not a regular file"
		},
		"link to /dev/zero": func(t *testing.T, path string) string {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
			return "answers.json is not a regular file"
		},
		"too large": func(t *testing.T, path string) string {
			writeFile(t, path, `{"answers":[]}`+strings.Repeat(" ", maxFileSize))
			return "answers.json is larger than 1 MiB"
		},
	}
	for name, plant := range plant {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			s, err := New(filepath.Join(t.TempDir(), "questions"), questions.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			sess := create(t, s)
			path := filepath.Join(s.Dir(), sess.ID, AnswersFile)
			want := plant(t, path)
			notBlocked(t, "Get and List", func() {
				got, err := s.Get(sess.ID)
				if err != nil || got.Status.Status != questions.Pending || !strings.Contains(got.Refused, want) {
					t.Errorf("Get: %+v %v", got, err)
				}
				for range 2 {
					if all, err := s.List(); err != nil || len(all) != 1 || all[0].Status.Status != questions.Pending {
						t.Errorf("List: %v", err)
					}
				}
			})
			if n := strings.Count(logs.String(), `msg="answers.json ignored"`); n != 1 || !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), path) {
				t.Errorf("want one warning naming %s and saying %q, got %d:\n%s", path, want, n, logs.String())
			}
			notBlocked(t, "Wait", func() {
				answer := storetest.OnceWaiting(func() {
					if _, err := s.Answer(sess.ID, storetest.GoodAnswers, ""); err != nil {
						t.Errorf("Answer: %v", err)
					}
				})
				got, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute, ProgressEvery: time.Millisecond, Progress: answer})
				if err != nil || got.Status.Status != questions.Completed || got.Answers == nil {
					t.Errorf("Wait: %+v %v", got, err)
				}
			})
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("answers.json after the answer: %v %v", fi, err)
			}
		})
	}
}

// TestNonRegularSetFilesAbandonTheSet: a FIFO as request.json or status.json is not read either (only
// qkit writes those, so the set is abandoned, saying why), and nothing blocks.
func TestNonRegularSetFilesAbandonTheSet(t *testing.T) {
	for _, file := range []string{RequestFile, StatusFile} {
		t.Run(file, func(t *testing.T) {
			s := newStore(t)
			sess := create(t, s)
			path := filepath.Join(s.Dir(), sess.ID, file)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
			notBlocked(t, "Get", func() {
				got, err := s.Get(sess.ID)
				if err != nil || got.Status.Status != questions.Abandoned || !strings.Contains(got.Status.Reason, file+" is not a regular file") {
					t.Errorf("%+v %v", got, err)
				}
			})
		})
	}
}
