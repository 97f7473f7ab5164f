package storetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
)

// Clock is a test clock that can be moved forward.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the time on the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// CreateIn creates a LangSet set in s.
func CreateIn(t testing.TB, s questions.Store) *questions.Session {
	t.Helper()
	sess, err := s.Create(MustSet(t, LangSet), questions.CreateOptions{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// claimedByTerminal creates a set in s claimed by a live process of this machine that stands for
// a person's terminal (it lives a minute unless killed, as the test does to end the claim).
func claimedByTerminal(t *testing.T, b *Backend, s questions.Store) (*questions.Session, *exec.Cmd) {
	t.Helper()
	sess := CreateIn(t, s)
	if _, _, err := s.Claim(sess.ID); err != nil {
		t.Fatal(err)
	}
	term := exec.Command("sleep", "60")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Process.Kill(); _ = term.Wait() })
	b.SetClaimer(t, sess.ID, terminalProcess(term))
	return sess, term
}

// startOf is the start time of pid as questions.Self records its own (Linux: field 22 of
// /proc/PID/stat, after the command name), or "" where there is none.
func startOf(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// terminalProcess is term as a claim records the process that holds it.
func terminalProcess(term *exec.Cmd) questions.Process {
	me := questions.Self()
	return questions.Process{PID: term.Process.Pid, Start: startOf(term.Process.Pid), Host: me.Host, Boot: me.Boot}
}

// OnceWaiting is a wait's Progress callback that runs fn on the first tick only: by then the wait
// has read the set and watches it, so what fn does happens during the wait, not before it.
func OnceWaiting(fn func()) func(time.Duration) {
	var once sync.Once
	return func(time.Duration) { once.Do(fn) }
}

// waitPendingPast starts a WaitPending on st that skips the decoy set and returns once it has
// looked at the decoy (so it is watching: both stores watch before they look); the channel gets
// what the wait returns.
func waitPendingPast(st questions.Store, decoy string, timeout time.Duration) <-chan *questions.Session {
	looked := make(chan struct{})
	var once sync.Once
	done := make(chan *questions.Session, 1)
	go func() {
		p, _ := st.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: timeout, Skip: func(id string) bool {
			if id == decoy {
				once.Do(func() { close(looked) })
				return true
			}
			return false
		}})
		done <- p
	}()
	select {
	case <-looked:
	case p := <-done:
		done <- p // it ended without looking; the caller sees what it returned
	}
	return done
}

func storeCreateGetList(t *testing.T, b *Backend) {
	c := &Clock{}
	s := b.Open(t, questions.Options{Now: c.Now})
	first := CreateIn(t, s)
	c.Advance(time.Second)
	second := CreateIn(t, s)
	if first.ID == second.ID || first.Status.CallID == second.Status.CallID || !questions.ValidID(first.ID) {
		t.Fatal("ids reused or malformed")
	}
	got, err := s.Get(first.ID)
	if err != nil || got.Status.Status != questions.Pending || got.Request.Owner.PID != os.Getpid() || len(got.Set().Questions) != 2 || got.Request.Source != "test" {
		t.Fatalf("%+v %v", got, err)
	}
	all, err := s.List()
	if err != nil || len(all) != 2 || all[0].ID != first.ID || all[1].ID != second.ID {
		t.Fatalf("list: %v %v", all, err)
	}
	if _, err := s.Get(uuid.NewString()); !errors.Is(err, questions.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if s.Location() == "" {
		t.Fatal("no location")
	}
}

func storeResolve(t *testing.T, b *Backend) {
	s := b.Open(t, questions.Options{})
	sess := CreateIn(t, s)
	for _, p := range []string{sess.ID, sess.ID[:8], strings.ToUpper(sess.ID[:4])} {
		if id, err := s.Resolve(p); err != nil || id != sess.ID {
			t.Errorf("%s: %s %v", p, id, err)
		}
	}
	for _, p := range []string{"../x", "a/b", "", "zz", strings.Repeat("a", 37), "..", "/etc", "a.b", "*", ">"} {
		var inv *questions.InvalidIDError
		if _, err := s.Resolve(p); !errors.As(err, &inv) {
			t.Errorf("%q: %v", p, err)
		}
		if _, err := s.Get(p); !errors.As(err, &inv) {
			t.Errorf("get %q: %v", p, err)
		}
	}
	other := "0"
	if sess.ID[0] == '0' {
		other = "1"
	}
	if _, err := s.Resolve(other); !errors.Is(err, questions.ErrNotFound) {
		t.Errorf("got %v", err)
	}
	seen := map[byte]bool{sess.ID[0]: true}
	for {
		n := CreateIn(t, s)
		if seen[n.ID[0]] {
			var amb *questions.AmbiguousError
			if _, err := s.Resolve(n.ID[:1]); !errors.As(err, &amb) {
				t.Fatalf("got %v", err)
			}
			break
		}
		seen[n.ID[0]] = true
	}
}

// An answer given through one store (machine) wakes a wait on another.
func storeAnswerWakesWaiterOnAnotherMachine(t *testing.T, b *Backend) {
	asker, answerer := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	sess := CreateIn(t, asker)
	errc := make(chan error, 1)
	go func() {
		p, err := answerer.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 10 * time.Second})
		if err == nil {
			_, err = answerer.Answer(p.ID, GoodAnswers, "")
		}
		errc <- err
	}()
	got, err := asker.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	r := questions.ResultOf(got)
	if got.Status.Status != questions.Completed || r.CallID != sess.Status.CallID || strings.Join(r.Answers[1].Selected, ",") != "Lint,Docs" {
		t.Fatalf("%+v", r)
	}
	var closed *questions.ClosedError
	if _, err := asker.Answer(sess.ID, GoodAnswers, ""); !errors.As(err, &closed) || closed.Status != questions.Completed {
		t.Fatalf("second answer: %v", err)
	}
	if _, err := answerer.Reject(sess.ID, "", ""); !errors.As(err, &closed) {
		t.Fatalf("reject after answer: %v", err)
	}
	// Answers are checked before they can win.
	sess = CreateIn(t, asker)
	var ve *questions.ValidationError
	if _, err := answerer.Answer(sess.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Cobol"}}}, ""); !errors.As(err, &ve) {
		t.Fatalf("bad answer: %v", err)
	}
	if got, _ := asker.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("a bad answer changed the set: %s", got.Status.Status)
	}
}

func storeRejectTimeoutCancel(t *testing.T, b *Backend) {
	s := b.Open(t, questions.Options{})
	sess := CreateIn(t, s)
	go func() { _, _ = s.Reject(sess.ID, "  not now ", "") }()
	got, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{})
	if err != nil || got.Status.Status != questions.Rejected || questions.ResultOf(got).RejectionReason != "not now" {
		t.Fatalf("%+v %v", got, err)
	}
	var ve *questions.ValidationError
	if _, err := s.Reject(CreateIn(t, s).ID, strings.Repeat("x", questions.MaxReasonLen+1), ""); !errors.As(err, &ve) {
		t.Fatalf("long reason: %v", err)
	}
	// A reason that is not UTF-8 is refused, not stored with replacement characters.
	bad := CreateIn(t, s)
	if _, err := s.Reject(bad.ID, "bad \xff", ""); !errors.As(err, &ve) || err.Error() != "reason: must be valid UTF-8 text" {
		t.Fatalf("reason not UTF-8: %v", err)
	}
	if got, err := s.Get(bad.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("after a refused reason: %+v %v", got, err)
	}

	sess = CreateIn(t, s)
	_, err = s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 30 * time.Millisecond})
	var ended *questions.EndedError
	if !errors.As(err, &ended) || ended.Status != questions.TimedOut || !errors.Is(err, questions.ErrTimedOut) {
		t.Fatalf("got %v", err)
	}
	if st, _ := s.Get(sess.ID); st.Status.Status != questions.TimedOut || st.Status.Reason != "no answer within 30ms" {
		t.Fatalf("status %+v", st.Status)
	}
	var closed *questions.ClosedError
	if _, err := s.Answer(sess.ID, GoodAnswers, ""); !errors.As(err, &closed) || closed.Status != questions.TimedOut {
		t.Fatalf("answer after timeout: %v", err)
	}

	sess = CreateIn(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled while it waits (its first tick), not before it starts.
	if _, err := s.Wait(ctx, sess.ID, questions.WaitOptions{CancelReason: "cancelled by the client",
		ProgressEvery: time.Millisecond, Progress: OnceWaiting(cancel)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if st, _ := s.Get(sess.ID); st.Status.Status != questions.Abandoned || st.Status.Reason != "cancelled by the client" {
		t.Fatalf("status %+v", st.Status)
	}
	if _, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{}); !errors.As(err, &ended) || ended.Status != questions.Abandoned {
		t.Fatalf("wait on an abandoned set: %v", err)
	}
}

// Answers and rejections from two machines race a timeout: exactly one wins, and the waiter reports it.
func storeOneWinner(t *testing.T, b *Backend) {
	a, other := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	for round := 0; round < 10; round++ {
		sess := CreateIn(t, a)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := 0; i < 8; i++ {
			st := a
			if i >= 4 {
				st = other
			}
			wg.Go(func() {
				var err error
				if i%2 == 0 {
					_, err = st.Answer(sess.ID, GoodAnswers, "")
				} else {
					_, err = st.Reject(sess.ID, "r", "")
				}
				var closed *questions.ClosedError
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.As(err, &closed):
					t.Errorf("a loser got %v", err)
				}
			})
		}
		got, werr := a.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Millisecond})
		wg.Wait()
		final, _ := other.Get(sess.ID)
		switch final.Status.Status {
		case questions.TimedOut:
			if wins != 0 || !errors.Is(werr, questions.ErrTimedOut) {
				t.Fatalf("timed out but %d wins, wait %v", wins, werr)
			}
		case questions.Completed, questions.Rejected:
			if wins != 1 {
				t.Fatalf("%d winners", wins)
			}
			if werr == nil && got.Status.Status != final.Status.Status {
				t.Fatalf("waiter saw %s, final %s", got.Status.Status, final.Status.Status)
			}
		default:
			t.Fatalf("final %s", final.Status.Status)
		}
	}
}

func storeClaims(t *testing.T, b *Backend) {
	s, other := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	sess := CreateIn(t, s)
	tok, got, err := s.Claim(sess.ID)
	if err != nil || got.Status.Status != questions.InProgress || got.Status.Claim == nil || got.Status.Claim.Token != tok {
		t.Fatalf("%+v %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := other.WaitPending(ctx, questions.WaitPendingOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a claimed set was offered: %v", err)
	}
	if _, _, err := other.Claim(sess.ID); !errors.Is(err, questions.ErrClaimed) {
		t.Fatalf("second claim: %v", err)
	}
	if err := s.Release(sess.ID, tok); err != nil {
		t.Fatal(err)
	}
	p, err := other.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 5 * time.Second})
	if err != nil || p.ID != sess.ID {
		t.Fatalf("%v %v", p, err)
	}
	tok, _, _ = other.Claim(sess.ID)
	if _, err := other.Answer(sess.ID, GoodAnswers, tok); err != nil {
		t.Fatal(err)
	}
	// A claim held by a terminal that has exited lapses back to pending.
	sess = CreateIn(t, s)
	if _, _, err := s.Claim(sess.ID); err != nil {
		t.Fatal(err)
	}
	b.SetOwner(t, sess.ID, questions.Self())                  // the asker lives on
	b.SetClaimer(t, sess.ID, questions.Process{PID: 1 << 30}) // a terminal that has exited
	if got, err := other.Get(sess.ID); err != nil || got.Status.Status != questions.Pending || got.Status.Claim != nil {
		t.Fatalf("%+v %v", got, err)
	}
}

// A claim by a terminal on another machine keeps other terminals away for claimLease, then lapses:
// a terminal that crashed there is never seen.
func storeRemoteClaimLapsesAfterItsLease(t *testing.T, b *Backend) {
	c := &Clock{}
	s, other := b.Open(t, questions.Options{Now: c.Now}), b.Open(t, questions.Options{Now: c.Now})
	sess := CreateIn(t, s)
	if _, _, err := s.Claim(sess.ID); err != nil {
		t.Fatal(err)
	}
	b.SetClaimer(t, sess.ID, questions.Process{PID: 1 << 30, Host: "elsewhere.invalid"})
	if _, _, err := other.Claim(sess.ID); !errors.Is(err, questions.ErrClaimed) {
		t.Fatalf("a fresh remote claim did not hold: %v", err)
	}
	c.Advance(lifecycle.ClaimLease + time.Minute)
	if got, err := other.Get(sess.ID); err != nil || got.Status.Status != questions.Pending || got.Status.Claim != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if _, _, err := other.Claim(sess.ID); err != nil {
		t.Fatalf("claim after the lease: %v", err)
	}
}

func storeWaitPendingWokenByNewSet(t *testing.T, b *Backend) {
	s, other := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	// The waiter skips a decoy set; its first look at the decoy means it is watching (both
	// stores watch before they look), so the set created after that must wake it.
	decoy := CreateIn(t, other)
	done := waitPendingPast(s, decoy.ID, 10*time.Second)
	sess := CreateIn(t, other)
	if p := <-done; p == nil || p.ID != sess.ID {
		t.Fatalf("got %v", p)
	}
	if _, err := s.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: time.Second, Skip: func(id string) bool { return id == sess.ID || id == decoy.ID }}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("skip: %v", err)
	}
}

// A set removed while someone waits for it (by hand, or by a retention sweep elsewhere) ends the wait
// with ErrNotFound: gone.
func storeGoneWhileWaiting(t *testing.T, b *Backend) {
	s := b.Open(t, questions.Options{})
	sess := CreateIn(t, s)
	removed := false
	_, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 10 * time.Second,
		ProgressEvery: time.Millisecond, Progress: OnceWaiting(func() { b.Remove(t, sess.ID); removed = true })})
	if !removed {
		t.Fatalf("the wait ended before the set was removed: %v", err)
	}
	if !errors.Is(err, questions.ErrNotFound) {
		t.Fatalf("got %v", err)
	}
	if all, err := s.List(); err != nil || len(all) != 0 {
		t.Fatalf("list after removal: %v %v", all, err)
	}
}

// A pending set whose asking process has exited is marked abandoned, never removed unseen; it goes
// one whole retention period later.
func storeOwnerGoneIsAbandonedNotDeleted(t *testing.T, b *Backend) {
	c := &Clock{}
	s := b.Open(t, questions.Options{Now: c.Now})
	sess := CreateIn(t, s)
	b.SetOwner(t, sess.ID, questions.Process{PID: 1 << 30})
	c.Advance(24 * time.Hour)
	if n, err := s.Cleanup(time.Hour); err != nil || n != 0 {
		t.Fatalf("removed %d, %v", n, err)
	}
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.Abandoned || !strings.Contains(got.Status.Reason, "has exited") {
		t.Fatalf("%+v %v", got, err)
	}
	// An owner on another host is never taken for gone.
	far := CreateIn(t, s)
	b.SetOwner(t, far.ID, questions.Process{PID: 1 << 30, Host: "elsewhere.invalid"})
	if got, _ := s.Get(far.ID); got.Status.Status != questions.Pending {
		t.Fatalf("remote owner: %s", got.Status.Status)
	}
	c.Advance(24 * time.Hour)
	if n, err := s.Cleanup(time.Hour); err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
}

func storeCleanup(t *testing.T, b *Backend) {
	c := &Clock{}
	s := b.Open(t, questions.Options{Now: c.Now})
	done := CreateIn(t, s)
	if _, err := s.Answer(done.ID, GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	pending := CreateIn(t, s)
	if n, err := s.Cleanup(time.Hour); err != nil || n != 0 {
		t.Fatalf("fresh: removed %d, %v", n, err)
	}
	c.Advance(2 * time.Hour)
	if n, err := s.Cleanup(time.Hour); err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if _, err := s.Get(done.ID); !errors.Is(err, questions.ErrNotFound) {
		t.Fatalf("finished set kept: %v", err)
	}
	if got, err := s.Get(pending.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("pending set: %v", err)
	}
}

func storeAskFlow(t *testing.T, b *Backend) {
	s, person := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	created := make(chan *questions.Session, 1)
	go func() {
		sess := <-created
		_, _ = person.Answer(sess.ID, GoodAnswers, "")
	}()
	res, sess, err := s.Ask(context.Background(), MustSet(t, LangSet), questions.AskOptions{
		Source: "test", CallID: "call-1", Timeout: time.Minute, Retention: time.Hour,
		Created: func(s *questions.Session) { created <- s },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.CallID != "call-1" || res.SessionID != sess.ID || res.Status != questions.Completed {
		t.Fatalf("%+v", res)
	}
	if !strings.HasPrefix(res.Text(), "Here are the user's answers:\n\n1. [Language]") {
		t.Fatalf("%s", res.Text())
	}
}

// A detachable set whose call went away stays answerable on every store; the answer given on another
// machine is collected, once, by the repeated call.
func storeDetachedSetCollectedByARepeatedCall(t *testing.T, b *Backend) {
	s, person := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	set := MustSet(t, LangSet)
	ctx, cancel := context.WithCancel(context.Background())
	created := make(chan *questions.Session, 1)
	go func() { <-created; cancel() }()
	if _, _, err := s.Ask(ctx, set, questions.AskOptions{Source: "mcp", Detachable: true, Created: func(s *questions.Session) { created <- s }}); !errors.Is(err, context.Canceled) {
		t.Fatalf("first call: %v", err)
	}
	found, err := questions.FindDetached(person, set, "mcp")
	if err != nil || found == nil || found.Status.Status != questions.Detached {
		t.Fatalf("detached set: %+v %v", found, err)
	}
	p, err := person.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 5 * time.Second})
	if err != nil || p.ID != found.ID {
		t.Fatalf("a detached set is not offered: %v %v", p, err)
	}
	if _, err := person.Answer(found.ID, GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	res, sess, err := s.Ask(context.Background(), set, questions.AskOptions{Source: "mcp", Detachable: true, Timeout: time.Minute})
	if err != nil || sess.ID != found.ID || res.Status != questions.Completed {
		t.Fatalf("repeated call: %+v %v", res, err)
	}
	if again, _ := questions.FindDetached(s, set, "mcp"); again != nil {
		t.Fatal("an outcome was offered for collection twice")
	}
}

// An asker qkit cannot see (another machine, or the same host name on another boot) is never taken
// for gone; its open set ends at its expiry instead, once the grace for its own call has passed.
func storeUnseenAskerTimesOutAtItsExpiry(t *testing.T, b *Backend) {
	c := &Clock{}
	s := b.Open(t, questions.Options{Now: c.Now})
	sess, err := s.Create(MustSet(t, LangSet), questions.CreateOptions{Source: "test", Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	b.SetOwner(t, sess.ID, questions.Process{PID: 1 << 30, Host: host, Boot: "another-boot"})
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("an asker on another boot was taken for gone: %s", got.Status.Status)
	}
	c.Advance(time.Hour + lifecycle.ExpiryGrace/2)
	if got, _ := s.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("ended within the grace: %s", got.Status.Status)
	}
	c.Advance(lifecycle.ExpiryGrace)
	got, err := s.Get(sess.ID)
	if err != nil || got.Status.Status != questions.TimedOut || !strings.Contains(got.Status.Reason, "no waiting call ended it") {
		t.Fatalf("%+v %v", got.Status, err)
	}
}

// A terminal holding a claim dies: nothing is written, yet a waiting `questions wait` is offered the
// set once the claim has lapsed.
func storeWaitPendingSeesAClaimLapseThatWritesNothing(t *testing.T, b *Backend) {
	s, other := b.Open(t, questions.Options{}), b.Open(t, questions.Options{})
	sess, term := claimedByTerminal(t, b, s)
	// A decoy asked later is listed after the claimed set: once the waiter has looked at it,
	// it has passed over the claimed set too.
	decoy := CreateIn(t, s)
	done := waitPendingPast(other, decoy.ID, 30*time.Second)
	select {
	case p := <-done:
		t.Fatalf("offered while the claim's terminal lives: %+v", p)
	default:
	}
	_ = term.Process.Kill()
	_ = term.Wait()
	if p := <-done; p == nil || p.ID != sess.ID {
		t.Fatalf("got %v", p)
	}
}

// Changes wakes on a new set (asked by another store on the same sets, as by another process or
// machine), on an answer, and on a removal.
func storeChanges(t *testing.T, b *Backend) {
	page := b.Open(t, questions.Options{})
	asker := b.Open(t, questions.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := page.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no change reported after %s", what)
		}
		for len(ch) > 0 { // coalesced wakes of the same change
			<-ch
		}
	}
	sess := CreateIn(t, asker)
	woken("a new set")
	if _, err := asker.Answer(sess.ID, GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	woken("an answer")
	b.Remove(t, sess.ID)
	woken("a removal")
}

// waitPendingWatchesTheClaimersExit: a claim's terminal that dies writes nothing, and the wait
// for a pending set learns of it from the exit watch, with every timer it could fall back on set to
// an hour (the file store's poll, the recheck of a local claim): waiting is a watch, not a poll.
func waitPendingWatchesTheClaimersExit(t *testing.T, b *Backend) {
	was := lifecycle.LocalClaimRecheck
	lifecycle.LocalClaimRecheck = time.Hour
	t.Cleanup(func() { lifecycle.LocalClaimRecheck = was })
	s, other := b.Open(t, questions.Options{Poll: time.Hour}), b.Open(t, questions.Options{Poll: time.Hour})
	sess, term := claimedByTerminal(t, b, s)
	decoy := CreateIn(t, s)
	done := waitPendingPast(other, decoy.ID, 30*time.Second)
	_ = term.Process.Kill()
	_ = term.Wait()
	if p := <-done; p == nil || p.ID != sess.ID {
		t.Fatalf("got %v (the wait did not learn that the claim's terminal exited)", p)
	}
}

// A completed set whose stored answers do not fit its questions (another tool wrote them) is never
// handed out as answered with them: reading it shows it abandoned, naming the answers, and a wait
// on it ends abandoned. Both stores read it the same way.
func storeCompletedSetWithAnswersThatDoNotFit(t *testing.T, b *Backend) {
	s := b.Open(t, questions.Options{})
	sess := CreateIn(t, s)
	if _, err := s.Answer(sess.ID, GoodAnswers, ""); err != nil {
		t.Fatal(err)
	}
	b.EditAnswers(t, sess.ID, func(a *questions.Answers) { a.Answers[0].Selected = []string{"Cobol"} })
	reader := b.Open(t, questions.Options{})
	got, err := reader.Get(sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Status != questions.Abandoned || got.Answers != nil || !strings.Contains(got.Status.Reason, "answers") {
		t.Fatalf("read as %s (%q), answers %+v", got.Status.Status, got.Status.Reason, got.Answers)
	}
	_, err = reader.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute})
	var ended *questions.EndedError
	if !errors.As(err, &ended) || ended.Status != questions.Abandoned {
		t.Fatalf("wait: %v", err)
	}
}

var suite = []struct {
	name string
	test func(t *testing.T, b *Backend)
	// serial: the test changes a package variable (lifecycle.LocalClaimRecheck), so it runs
	// alone, before the others.
	serial bool
}{
	{name: "StoreCreateGetList", test: storeCreateGetList},
	{name: "StoreResolve", test: storeResolve},
	{name: "StoreAnswerWakesWaiterOnAnotherMachine", test: storeAnswerWakesWaiterOnAnotherMachine},
	{name: "StoreRejectTimeoutCancel", test: storeRejectTimeoutCancel},
	{name: "StoreOneWinner", test: storeOneWinner},
	{name: "StoreClaims", test: storeClaims},
	{name: "StoreRemoteClaimLapsesAfterItsLease", test: storeRemoteClaimLapsesAfterItsLease},
	{name: "StoreWaitPendingWokenByNewSet", test: storeWaitPendingWokenByNewSet},
	{name: "StoreGoneWhileWaiting", test: storeGoneWhileWaiting},
	{name: "StoreOwnerGoneIsAbandonedNotDeleted", test: storeOwnerGoneIsAbandonedNotDeleted},
	{name: "StoreCleanup", test: storeCleanup},
	{name: "StoreAskFlow", test: storeAskFlow},
	{name: "StoreDetachedSetCollectedByARepeatedCall", test: storeDetachedSetCollectedByARepeatedCall},
	{name: "StoreUnseenAskerTimesOutAtItsExpiry", test: storeUnseenAskerTimesOutAtItsExpiry},
	{name: "StoreWaitPendingSeesAClaimLapseThatWritesNothing", test: storeWaitPendingSeesAClaimLapseThatWritesNothing},
	{name: "StoreChanges", test: storeChanges},
	{name: "StoreCompletedSetWithAnswersThatDoNotFit", test: storeCompletedSetWithAnswersThatDoNotFit},
	{name: "WaitPendingWatchesTheClaimersExit", test: waitPendingWatchesTheClaimersExit, serial: true},
}
