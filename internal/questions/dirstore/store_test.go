package dirstore

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "questions"), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func create(t *testing.T, s *Store) *questions.Session {
	t.Helper()
	sess, err := s.Create(storetest.MustSet(t, storetest.LangSet), questions.CreateOptions{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func TestCreateLayoutAndPermissions(t *testing.T) {
	s := newStore(t)
	sess := create(t, s)
	dir := filepath.Join(s.Dir(), sess.ID)
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir %v %v", fi.Mode(), err)
	}
	for _, f := range []string{RequestFile, StatusFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s %v %v", f, fi, err)
		}
	}
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.Pending || got.Status.CallID == "" || got.Request.Owner.PID != os.Getpid() {
		t.Fatalf("%+v %v", got, err)
	}
	// Two calls with the same questions still get distinct sessions and call ids.
	other := create(t, s)
	if other.ID == sess.ID || other.Status.CallID == sess.Status.CallID {
		t.Fatal("ids reused")
	}
}

func TestWaitFallsBackToPolling(t *testing.T) {
	// With file events never delivered (a fake hub without a watcher), the poll still finds the answer.
	s := newStore(t)
	s.poll = 10 * time.Millisecond
	fake := &hub{subs: lifecycle.Subscribers{}, done: make(chan struct{})}
	close(fake.done)
	s.hubs.Use(func() *hub { return fake }) // in place before the wait's own use
	sess := create(t, s)
	go func() { _, _ = s.Answer(sess.ID, storetest.GoodAnswers, "") }()
	if got, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute}); err != nil || got.Status.Status != questions.Completed {
		t.Fatalf("%v %v", got, err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedFilesAbandonTheSession(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	// A truncated request.json.
	sess := create(t, s)
	writeFile(t, filepath.Join(s.Dir(), sess.ID, RequestFile), `{"sessionId":`)
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.Abandoned || !strings.Contains(got.Status.Reason, "request.json is malformed") {
		t.Fatalf("%+v %v", got, err)
	}
	// A hand-written answers.json that is valid completes the session (as another tool would).
	sess = create(t, s)
	write := storetest.OnceWaiting(func() {
		writeFile(t, filepath.Join(s.Dir(), sess.ID, AnswersFile), `{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[]}]}`)
	})
	if got, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 5 * time.Second, ProgressEvery: time.Millisecond, Progress: write}); err != nil || got.Status.Status != questions.Completed {
		t.Fatalf("%+v %v", got, err)
	}
	// A truncated answers.json abandons it, and the waiter gets an error, not a crash.
	sess = create(t, s)
	write = storetest.OnceWaiting(func() { writeFile(t, filepath.Join(s.Dir(), sess.ID, AnswersFile), `{"answers":[{"questionIn`) })
	_, err = s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 5 * time.Second, ProgressEvery: time.Millisecond, Progress: write})
	var ended *questions.EndedError
	if !errors.As(err, &ended) || ended.Status != questions.Abandoned || !strings.Contains(ended.Reason, "answers.json is malformed") {
		t.Fatalf("got %v", err)
	}
	// answers.json corrupted after completion.
	sess = create(t, s)
	if _, err := s.Answer(sess.ID, storetest.GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(s.Dir(), sess.ID, AnswersFile), `nope`)
	if _, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{}); !errors.As(err, &ended) || ended.Status != questions.Abandoned {
		t.Fatalf("got %v", err)
	}
	// A status.json with an unknown status.
	sess = create(t, s)
	writeFile(t, filepath.Join(s.Dir(), sess.ID, StatusFile), `{"status":"weird"}`)
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Abandoned {
		t.Fatalf("status %s", got.Status.Status)
	}
}

func rewrite(t *testing.T, path string, edit func(m map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, _ = json.Marshal(m)
	writeFile(t, path, string(data))
}

// The file store's cleanup never touches folders that are not sets, and removes staging folders
// left by a crash once they are an hour old (the rule itself is in the suite: TestStoreCleanup).
func TestCleanupLeavesForeignFolders(t *testing.T) {
	s := newStore(t)
	done := create(t, s)
	if _, err := s.Answer(done.ID, storetest.GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"not-a-session", ".new-" + done.ID[:8]} {
		if err := os.Mkdir(filepath.Join(s.Dir(), d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if n, err := s.Cleanup(time.Hour); err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "not-a-session")); err != nil {
		t.Fatal("a foreign directory was touched")
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), ".new-"+done.ID[:8])); err == nil {
		t.Fatal("an old staging folder was kept")
	}
}

// BenchmarkCreateAnswerWait is one whole session in process: create (two fsynced files), answer
// (two more) and the waiter woken by the file event.
func BenchmarkCreateAnswerWait(b *testing.B) {
	s, _ := New(filepath.Join(b.TempDir(), "q"), questions.Options{})
	defer s.Close()
	set := storetest.MustSet(b, storetest.LangSet)
	for b.Loop() {
		sess, _ := s.Create(set, questions.CreateOptions{})
		go func() { _, _ = s.Answer(sess.ID, storetest.GoodAnswers, "") }()
		if _, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// An answers.json caught half-written by hand (truncated, not yet filled in) is not settled at once,
// even when file events are unavailable and the poll is what sees it: the complete file that follows
// is adopted.
func TestHalfWrittenAnswersAreNotSettledEarly(t *testing.T) {
	s := newStore(t)
	s.poll = 5 * time.Millisecond
	fake := &hub{subs: lifecycle.Subscribers{}, done: make(chan struct{})}
	close(fake.done)
	s.hubs.Use(func() *hub { return fake }) // in place before the wait's own use
	sess := create(t, s)
	path := filepath.Join(s.Dir(), sess.ID, AnswersFile)
	writeFile(t, path, `{"answers":[{"questionIn`)
	// The complete file is written from the wait's third progress tick: the wait has read the
	// truncated file first and gone round its loop (polls included) since, without settling it.
	ticks := 0
	complete := func(time.Duration) {
		if ticks++; ticks == 3 {
			writeFile(t, path, `{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[]}]}`)
		}
	}
	res, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 10 * time.Second, ProgressEvery: 10 * time.Millisecond, Progress: complete})
	if err != nil || res.Status.Status != questions.Completed || ticks < 3 {
		t.Fatalf("%+v %v after %d ticks", res, err, ticks)
	}
}

// list and show (Get, List) leave a freshly written answers.json alone too; once it has stayed
// malformed for a while, it abandons the session.
func TestFreshMalformedAnswersWaitBeforeAbandoning(t *testing.T) {
	s := newStore(t)
	sess := create(t, s)
	writeFile(t, filepath.Join(s.Dir(), sess.ID, AnswersFile), `{"answers":[`)
	if got, err := s.Get(sess.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("fresh: %+v %v", got, err)
	}
	if all, err := s.List(); err != nil || len(all) != 1 || all[0].Status.Status != questions.Pending {
		t.Fatalf("fresh list: %v", err)
	}
	s.now = func() time.Time { return time.Now().Add(malformedDelay) }
	if got, err := s.Get(sess.ID); err != nil || got.Status.Status != questions.Abandoned || !strings.Contains(got.Status.Reason, "answers.json is malformed") {
		t.Fatalf("settled: %+v %v", got, err)
	}
}

// The cleanup started by Ask runs beside the question: a cleanup that is stuck (here on a finished
// session's lock) delays neither the session nor the answer. It is joined by Close.
func TestAskDoesNotWaitForTheCleanup(t *testing.T) {
	s := newStore(t)
	old := create(t, s)
	if _, err := s.Reject(old.ID, "", ""); err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339Nano)
	rewrite(t, s.path(old.ID, StatusFile), func(m map[string]any) { m["createdAt"], m["updatedAt"] = stale, stale })
	lock, err := filestore.LockFor(s.path(old.ID, StatusFile), dirPerm)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock() // also on failure, or Close would wait for the stuck cleanup forever
	var logs strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	created := make(chan *questions.Session, 1)
	go func() {
		sess := <-created
		_, _ = s.Answer(sess.ID, storetest.GoodAnswers, "")
	}()
	done := make(chan error, 1)
	go func() {
		res, _, err := s.Ask(context.Background(), storetest.MustSet(t, storetest.LangSet), questions.AskOptions{
			Retention: time.Hour, Logger: logger, Created: func(s *questions.Session) { created <- s },
		})
		if err == nil && res.Status != questions.Completed {
			err = errors.New("status " + string(res.Status))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		lock.Unlock()
		t.Fatal("Ask waited for the cleanup")
	}
	lock.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), `msg="removed expired question sessions" count=1`) {
		t.Fatalf("log:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
