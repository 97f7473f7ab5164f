package questions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func createDetachable(t *testing.T, s *FileStore, timeout time.Duration) *Session {
	t.Helper()
	sess, err := s.Create(mustSet(t, langSet), CreateOptions{Source: "mcp", Timeout: timeout, Detachable: true})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// A cancelled wait detaches a detachable set: it stays answerable, and the answer waits for a
// repeated call, which collects it exactly once.
func TestCancelledWaitDetaches(t *testing.T) {
	s := newStore(t)
	sess := createDetachable(t, s, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Wait(ctx, sess.ID, WaitOptions{Detach: true, CancelReason: "gone"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait: %v", err)
	}
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != Detached || !got.Status.Detached || !strings.HasPrefix(got.Status.Reason, "gone; ") {
		t.Fatalf("%+v %v", got.Status, err)
	}
	if _, err := s.Answer(sess.ID, goodAnswers, ""); err != nil {
		t.Fatalf("a detached set must stay answerable: %v", err)
	}
	found, err := FindDetached(s, mustSet(t, langSet), "mcp")
	if err != nil || found == nil || found.ID != sess.ID {
		t.Fatalf("found %v, %v", found, err)
	}
	if other, _ := FindDetached(s, mustSet(t, langSet), "cli"); other != nil {
		t.Fatal("a set asked from another source was offered")
	}
	taken, err := s.Attach(sess.ID, time.Minute)
	if err != nil || taken.Status.Status != Completed || taken.Status.Detached {
		t.Fatalf("attach: %+v %v", taken, err)
	}
	if again, _ := FindDetached(s, mustSet(t, langSet), "mcp"); again != nil {
		t.Fatal("an outcome was offered for collection twice")
	}
	if _, err := s.Attach(sess.ID, time.Minute); err == nil {
		t.Fatal("second attach succeeded")
	}
}

// Sets of the command line (not detachable) are still abandoned when their wait is cancelled.
func TestCancelledWaitAbandonsOtherSets(t *testing.T) {
	s := newStore(t)
	sess := create(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = s.Wait(ctx, sess.ID, WaitOptions{})
	if got, _ := s.Get(sess.ID); got.Status.Status != Abandoned {
		t.Fatalf("%+v", got.Status)
	}
}

// A repeated call takes a detached set over: pending again, with the new caller as waiter and a new
// expiry; a detached set nobody takes over times out at its expiry.
func TestAttachAndExpiry(t *testing.T) {
	s := newStore(t)
	sess := createDetachable(t, s, time.Minute)
	if _, err := s.Detach(sess.ID, "gone"); err != nil {
		t.Fatal(err)
	}
	taken, err := s.Attach(sess.ID, time.Hour)
	if err != nil || taken.Status.Status != Pending || taken.Status.Waiter == nil || taken.Status.ExpiresAt == nil ||
		taken.ExpiresAt().Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("%+v %v", taken.Status, err)
	}
	if _, err := s.Detach(sess.ID, "gone again"); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != TimedOut {
		t.Fatalf("%+v %v", got.Status, err)
	}
}

// When the process that asked has exited, a detachable set becomes detached (an MCP server that
// stopped with its client); others are abandoned as before (TestOrphanedSessionsAreAbandonedNotDeleted).
func TestExitedAskerDetaches(t *testing.T) {
	s := newStore(t)
	sess := createDetachable(t, s, 0)
	rewrite(t, filepath.Join(s.Dir(), sess.ID, RequestFile), func(m map[string]any) {
		m["owner"] = map[string]any{"pid": 1 << 30}
	})
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != Detached || !strings.Contains(got.Status.Reason, "has exited") {
		t.Fatalf("%+v %v", got.Status, err)
	}
	// After a take-over the new waiter counts, not the one that asked first.
	if _, err := s.Attach(sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(sess.ID); got.Status.Status != Pending {
		t.Fatalf("the live waiter was ignored: %+v", got.Status)
	}
}

// A terminal that claims a detached set and lets go hands it back detached, not pending.
func TestClaimedDetachedSetIsReleasedDetached(t *testing.T) {
	s := newStore(t)
	sess := createDetachable(t, s, 0)
	if _, err := s.Detach(sess.ID, "gone"); err != nil {
		t.Fatal(err)
	}
	tok, got, err := s.Claim(sess.ID)
	if err != nil || got.Status.Status != InProgress {
		t.Fatalf("%+v %v", got, err)
	}
	if err := s.Release(sess.ID, tok); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(sess.ID); got.Status.Status != Detached {
		t.Fatalf("%+v", got.Status)
	}
}

// stopAtAnswers stops the store's clock at the modification time of the set's answers.json, once it
// exists, so no settle delay can ever pass.
func stopAtAnswers(s *FileStore, id string) {
	start := time.Now()
	s.now = func() time.Time {
		if fi, err := os.Stat(filepath.Join(s.Dir(), id, AnswersFile)); err == nil {
			return fi.ModTime()
		}
		return start
	}
}

func waitAsync(s Store, id string) <-chan error {
	got := make(chan error, 1)
	go func() {
		res, err := s.Wait(context.Background(), id, WaitOptions{Timeout: 30 * time.Second})
		if err == nil && res.Status.Status != Completed {
			err = errors.New("status " + string(res.Status.Status))
		}
		got <- err
	}()
	return got
}

const handAnswers = `{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[]}]}`

// An answers.json renamed into place is taken at once: with the clock stopped at the file's
// modification time, no settle delay could ever pass, and the wait still ends.
func TestRenamedAnswersAreTakenAtOnce(t *testing.T) {
	s := newStore(t)
	sess := create(t, s)
	stopAtAnswers(s, sess.ID)
	got := waitAsync(s, sess.ID)
	tmp := filepath.Join(s.Dir(), sess.ID, "answers.tmp")
	writeFile(t, tmp, handAnswers)
	if err := os.Rename(tmp, filepath.Join(s.Dir(), sess.ID, AnswersFile)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// An answers.json written in place is not taken while its writer still has it open, however
// complete it looks, until the settle delay has passed; closing it ends the write.
func TestInPlaceAnswersWaitForTheirWriter(t *testing.T) {
	if busy, known := beingWritten(os.Args[0]); !known || busy {
		t.Skip("this kernel or filesystem cannot tell whether a file is open for writing")
	}
	s := newStore(t)
	s.poll = 5 * time.Millisecond
	sess := create(t, s)
	stopAtAnswers(s, sess.ID)
	got := waitAsync(s, sess.ID)
	f, err := os.OpenFile(filepath.Join(s.Dir(), sess.ID, AnswersFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(handAnswers); err != nil {
		t.Fatal(err)
	}
	// Many polls and settle checks see the open, complete-looking file; none takes it.
	for range 20 {
		if cur, err := s.Get(sess.ID); err != nil || cur.Status.Status != Pending {
			t.Fatalf("taken while still open for writing: %+v %v", cur.Status, err)
		}
		select {
		case err := <-got:
			t.Fatalf("the wait ended while the file was open for writing: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: complete. The next look takes it (the clock is still stopped).
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestSessionAgeHeaderSource(t *testing.T) {
	asked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Session{ID: "0123456789abcdef", Status: Status{CreatedAt: asked},
		Request: &Request{Source: "mcp", Questions: []Question{{Header: "Language"}, {Header: "Extras"}}}}
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{-time.Second, "0s"}, {45 * time.Second, "45s"}, {12 * time.Minute, "12m"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"}} {
		if got := s.Age(asked.Add(c.after)); got != c.want {
			t.Errorf("Age after %v = %q, want %q", c.after, got, c.want)
		}
	}
	if s.Header() != "Language" || s.Source() != "mcp" {
		t.Errorf("Header, Source = %q, %q; want Language, mcp", s.Header(), s.Source())
	}
	unreadable := &Session{ID: "0123456789abcdef"}
	if unreadable.Header() != "" || unreadable.Source() != "" {
		t.Errorf("unreadable request: Header, Source = %q, %q; want empty", unreadable.Header(), unreadable.Source())
	}
}
