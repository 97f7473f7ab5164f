package dirstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

func createDetachable(t *testing.T, s *Store, timeout time.Duration) *questions.Session {
	t.Helper()
	sess, err := s.Create(storetest.MustSet(t, storetest.LangSet), questions.CreateOptions{Source: "mcp", Timeout: timeout, Detachable: true})
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
	if _, err := s.Wait(ctx, sess.ID, questions.WaitOptions{Detach: true, CancelReason: "gone"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait: %v", err)
	}
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.Detached || !got.Status.Detached || !strings.HasPrefix(got.Status.Reason, "gone; ") {
		t.Fatalf("%+v %v", got.Status, err)
	}
	if _, err := s.Answer(sess.ID, storetest.GoodAnswers, ""); err != nil {
		t.Fatalf("a detached set must stay answerable: %v", err)
	}
	found, err := questions.FindDetached(s, storetest.MustSet(t, storetest.LangSet), "mcp")
	if err != nil || found == nil || found.ID != sess.ID {
		t.Fatalf("found %v, %v", found, err)
	}
	if other, _ := questions.FindDetached(s, storetest.MustSet(t, storetest.LangSet), "cli"); other != nil {
		t.Fatal("a set asked from another source was offered")
	}
	taken, err := s.Attach(sess.ID, time.Minute)
	if err != nil || taken.Status.Status != questions.Completed || taken.Status.Detached {
		t.Fatalf("attach: %+v %v", taken, err)
	}
	if again, _ := questions.FindDetached(s, storetest.MustSet(t, storetest.LangSet), "mcp"); again != nil {
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
	_, _ = s.Wait(ctx, sess.ID, questions.WaitOptions{})
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Abandoned {
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
	if err != nil || taken.Status.Status != questions.Pending || taken.Status.Waiter == nil || taken.Status.ExpiresAt == nil ||
		taken.ExpiresAt().Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("%+v %v", taken.Status, err)
	}
	if _, err := s.Detach(sess.ID, "gone again"); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.TimedOut {
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
	if err != nil || got.Status.Status != questions.Detached || !strings.Contains(got.Status.Reason, "has exited") {
		t.Fatalf("%+v %v", got.Status, err)
	}
	// After a take-over the new waiter counts, not the one that asked first.
	if _, err := s.Attach(sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Pending {
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
	if err != nil || got.Status.Status != questions.InProgress {
		t.Fatalf("%+v %v", got, err)
	}
	if err := s.Release(sess.ID, tok); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Detached {
		t.Fatalf("%+v", got.Status)
	}
}

// stopAtAnswers stops the store's clock at the modification time of the set's answers.json, once it
// exists, so no settle delay can ever pass.
func stopAtAnswers(s *Store, id string) {
	start := time.Now()
	s.now = func() time.Time {
		if fi, err := os.Stat(filepath.Join(s.Dir(), id, AnswersFile)); err == nil {
			return fi.ModTime()
		}
		return start
	}
}

func waitAsync(s questions.Store, id string) <-chan error {
	got := make(chan error, 1)
	go func() {
		res, err := s.Wait(context.Background(), id, questions.WaitOptions{Timeout: 30 * time.Second})
		if err == nil && res.Status.Status != questions.Completed {
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
		if cur, err := s.Get(sess.ID); err != nil || cur.Status.Status != questions.Pending {
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
