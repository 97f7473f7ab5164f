package questions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// One suite of store semantics, run against every Store: the files and a NATS bucket on a real
// (embedded) NATS server. Each test gets a fresh store; "machines" are two stores on the same folder
// or bucket.

// clock is a test clock that can be moved forward.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// backend opens stores of one kind that share their sets, and reaches behind a store's back the way
// another tool (or another machine's retention sweep) would.
type backend struct {
	name string
	// open opens another store on the same sets (another process or machine).
	open func(t *testing.T, opts Options) Store
	// setOwner records p as the process that asked the set.
	setOwner func(t *testing.T, id string, p Process)
	// remove deletes the set outright.
	remove func(t *testing.T, id string)
}

func fileBackend(t *testing.T) *backend {
	dir := filepath.Join(t.TempDir(), "questions")
	return &backend{
		name: "file",
		open: func(t *testing.T, opts Options) Store {
			s, err := NewFileStore(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		setOwner: func(t *testing.T, id string, p Process) {
			rewrite(t, filepath.Join(dir, id, RequestFile), func(m map[string]any) { m["owner"] = p })
		},
		remove: func(t *testing.T, id string) {
			// As a careful tool removes a set: out of sight at once, then deleted.
			gone := filepath.Join(dir, ".gone-"+id)
			if err := os.Rename(filepath.Join(dir, id), gone); err != nil {
				t.Error(err)
			}
			_ = os.RemoveAll(gone)
		},
	}
}

func natsBackend(t *testing.T) *backend {
	srv := startNATS(t)
	inst := "t" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	var admin *NATSStore
	adminStore := func(t *testing.T) *NATSStore {
		if admin == nil {
			admin = openNATS(t, srv, inst, Options{})
		}
		return admin
	}
	return &backend{
		name: "nats",
		open: func(t *testing.T, opts Options) Store { return openNATS(t, srv, inst, opts) },
		setOwner: func(t *testing.T, id string, p Process) {
			a := adminStore(t)
			ctx, cancel := a.ctx()
			defer cancel()
			e, err := a.kv.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var rec record
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				t.Fatal(err)
			}
			rec.Request.Owner = p
			data, _ := json.Marshal(rec)
			if _, err := a.kv.Update(ctx, id, data, e.Revision()); err != nil {
				t.Fatal(err)
			}
		},
		remove: func(t *testing.T, id string) {
			a := adminStore(t)
			ctx, cancel := a.ctx()
			defer cancel()
			if err := a.kv.Purge(ctx, id); err != nil {
				t.Error(err)
			}
		},
	}
}

// eachStore runs fn as a subtest for the file store and for the NATS store.
func eachStore(t *testing.T, fn func(t *testing.T, b *backend)) {
	for _, mk := range []func(*testing.T) *backend{fileBackend, natsBackend} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

func createIn(t testing.TB, s Store) *Session {
	t.Helper()
	sess, err := s.Create(mustSet(t, langSet), CreateOptions{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func TestStoreCreateGetList(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		c := &clock{}
		s := b.open(t, Options{Now: c.Now})
		first := createIn(t, s)
		c.advance(time.Second)
		second := createIn(t, s)
		if first.ID == second.ID || first.Status.CallID == second.Status.CallID || !ValidID(first.ID) {
			t.Fatal("ids reused or malformed")
		}
		got, err := s.Get(first.ID)
		if err != nil || got.Status.Status != Pending || got.Request.Owner.PID != os.Getpid() || len(got.Set().Questions) != 2 || got.Request.Source != "test" {
			t.Fatalf("%+v %v", got, err)
		}
		all, err := s.List()
		if err != nil || len(all) != 2 || all[0].ID != first.ID || all[1].ID != second.ID {
			t.Fatalf("list: %v %v", all, err)
		}
		if _, err := s.Get(uuid.NewString()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
		if s.Location() == "" {
			t.Fatal("no location")
		}
	})
}

func TestStoreResolve(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s := b.open(t, Options{})
		sess := createIn(t, s)
		for _, p := range []string{sess.ID, sess.ID[:8], strings.ToUpper(sess.ID[:4])} {
			if id, err := s.Resolve(p); err != nil || id != sess.ID {
				t.Errorf("%s: %s %v", p, id, err)
			}
		}
		for _, p := range []string{"../x", "a/b", "", "zz", strings.Repeat("a", 37), "..", "/etc", "a.b", "*", ">"} {
			var inv *InvalidIDError
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
		if _, err := s.Resolve(other); !errors.Is(err, ErrNotFound) {
			t.Errorf("got %v", err)
		}
		seen := map[byte]bool{sess.ID[0]: true}
		for {
			n := createIn(t, s)
			if seen[n.ID[0]] {
				var amb *AmbiguousError
				if _, err := s.Resolve(n.ID[:1]); !errors.As(err, &amb) {
					t.Fatalf("got %v", err)
				}
				break
			}
			seen[n.ID[0]] = true
		}
	})
}

// An answer given through one store (machine) wakes a wait on another.
func TestStoreAnswerWakesWaiterOnAnotherMachine(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		asker, answerer := b.open(t, Options{}), b.open(t, Options{})
		sess := createIn(t, asker)
		errc := make(chan error, 1)
		go func() {
			p, err := answerer.WaitPending(context.Background(), WaitPendingOptions{Timeout: 10 * time.Second})
			if err == nil {
				_, err = answerer.Answer(p.ID, goodAnswers, "")
			}
			errc <- err
		}()
		got, err := asker.Wait(context.Background(), sess.ID, WaitOptions{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		r := ResultOf(got)
		if got.Status.Status != Completed || r.CallID != sess.Status.CallID || strings.Join(r.Answers[1].Selected, ",") != "Lint,Docs" {
			t.Fatalf("%+v", r)
		}
		var closed *ClosedError
		if _, err := asker.Answer(sess.ID, goodAnswers, ""); !errors.As(err, &closed) || closed.Status != Completed {
			t.Fatalf("second answer: %v", err)
		}
		if _, err := answerer.Reject(sess.ID, "", ""); !errors.As(err, &closed) {
			t.Fatalf("reject after answer: %v", err)
		}
		// Answers are checked before they can win.
		sess = createIn(t, asker)
		var ve *ValidationError
		if _, err := answerer.Answer(sess.ID, []Answer{{QuestionIndex: 0, Selected: []string{"Cobol"}}}, ""); !errors.As(err, &ve) {
			t.Fatalf("bad answer: %v", err)
		}
		if got, _ := asker.Get(sess.ID); got.Status.Status != Pending {
			t.Fatalf("a bad answer changed the set: %s", got.Status.Status)
		}
	})
}

func TestStoreRejectTimeoutCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s := b.open(t, Options{})
		sess := createIn(t, s)
		go func() { _, _ = s.Reject(sess.ID, "  not now ", "") }()
		got, err := s.Wait(context.Background(), sess.ID, WaitOptions{})
		if err != nil || got.Status.Status != Rejected || ResultOf(got).RejectionReason != "not now" {
			t.Fatalf("%+v %v", got, err)
		}
		var ve *ValidationError
		if _, err := s.Reject(createIn(t, s).ID, strings.Repeat("x", MaxReasonLen+1), ""); !errors.As(err, &ve) {
			t.Fatalf("long reason: %v", err)
		}

		sess = createIn(t, s)
		_, err = s.Wait(context.Background(), sess.ID, WaitOptions{Timeout: 30 * time.Millisecond})
		var ended *EndedError
		if !errors.As(err, &ended) || ended.Status != TimedOut || !errors.Is(err, ErrTimedOut) {
			t.Fatalf("got %v", err)
		}
		if st, _ := s.Get(sess.ID); st.Status.Status != TimedOut || st.Status.Reason != "no answer within 30ms" {
			t.Fatalf("status %+v", st.Status)
		}
		var closed *ClosedError
		if _, err := s.Answer(sess.ID, goodAnswers, ""); !errors.As(err, &closed) || closed.Status != TimedOut {
			t.Fatalf("answer after timeout: %v", err)
		}

		sess = createIn(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancelled while it waits (its first tick), not before it starts.
		if _, err := s.Wait(ctx, sess.ID, WaitOptions{CancelReason: "cancelled by the client",
			ProgressEvery: time.Millisecond, Progress: onceWaiting(cancel)}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if st, _ := s.Get(sess.ID); st.Status.Status != Abandoned || st.Status.Reason != "cancelled by the client" {
			t.Fatalf("status %+v", st.Status)
		}
		if _, err := s.Wait(context.Background(), sess.ID, WaitOptions{}); !errors.As(err, &ended) || ended.Status != Abandoned {
			t.Fatalf("wait on an abandoned set: %v", err)
		}
	})
}

// Answers and rejections from two machines race a timeout: exactly one wins, and the waiter reports it.
func TestStoreOneWinner(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		a, other := b.open(t, Options{}), b.open(t, Options{})
		for round := 0; round < 10; round++ {
			sess := createIn(t, a)
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
						_, err = st.Answer(sess.ID, goodAnswers, "")
					} else {
						_, err = st.Reject(sess.ID, "r", "")
					}
					var closed *ClosedError
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
			got, werr := a.Wait(context.Background(), sess.ID, WaitOptions{Timeout: time.Millisecond})
			wg.Wait()
			final, _ := other.Get(sess.ID)
			switch final.Status.Status {
			case TimedOut:
				if wins != 0 || !errors.Is(werr, ErrTimedOut) {
					t.Fatalf("timed out but %d wins, wait %v", wins, werr)
				}
			case Completed, Rejected:
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
	})
}

func TestStoreClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s, other := b.open(t, Options{}), b.open(t, Options{})
		sess := createIn(t, s)
		tok, got, err := s.Claim(sess.ID)
		if err != nil || got.Status.Status != InProgress || got.Status.Claim == nil || got.Status.Claim.Token != tok {
			t.Fatalf("%+v %v", got, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := other.WaitPending(ctx, WaitPendingOptions{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a claimed set was offered: %v", err)
		}
		if _, _, err := other.Claim(sess.ID); !errors.Is(err, ErrClaimed) {
			t.Fatalf("second claim: %v", err)
		}
		if err := s.Release(sess.ID, tok); err != nil {
			t.Fatal(err)
		}
		p, err := other.WaitPending(context.Background(), WaitPendingOptions{Timeout: 5 * time.Second})
		if err != nil || p.ID != sess.ID {
			t.Fatalf("%v %v", p, err)
		}
		tok, _, _ = other.Claim(sess.ID)
		if _, err := other.Answer(sess.ID, goodAnswers, tok); err != nil {
			t.Fatal(err)
		}
		// A claim held by a terminal that has exited lapses back to pending.
		sess = createIn(t, s)
		if _, _, err := s.Claim(sess.ID); err != nil {
			t.Fatal(err)
		}
		b.setOwner(t, sess.ID, Self()) // the asker lives on
		setClaimer(t, b, s, sess.ID)
		if got, err := other.Get(sess.ID); err != nil || got.Status.Status != Pending || got.Status.Claim != nil {
			t.Fatalf("%+v %v", got, err)
		}
	})
}

// A claim by a terminal on another machine keeps other terminals away for claimLease, then lapses:
// a terminal that crashed there is never seen.
func TestStoreRemoteClaimLapsesAfterItsLease(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		c := &clock{}
		s, other := b.open(t, Options{Now: c.Now}), b.open(t, Options{Now: c.Now})
		sess := createIn(t, s)
		if _, _, err := s.Claim(sess.ID); err != nil {
			t.Fatal(err)
		}
		setClaimerTo(t, s, sess.ID, Process{PID: 1 << 30, Host: "elsewhere.invalid"})
		if _, _, err := other.Claim(sess.ID); !errors.Is(err, ErrClaimed) {
			t.Fatalf("a fresh remote claim did not hold: %v", err)
		}
		c.advance(claimLease + time.Minute)
		if got, err := other.Get(sess.ID); err != nil || got.Status.Status != Pending || got.Status.Claim != nil {
			t.Fatalf("%+v %v", got, err)
		}
		if _, _, err := other.Claim(sess.ID); err != nil {
			t.Fatalf("claim after the lease: %v", err)
		}
	})
}

// setClaimer makes the set's claim belong to a process that has exited.
func setClaimer(t *testing.T, b *backend, s Store, id string) {
	t.Helper()
	setClaimerTo(t, s, id, Process{PID: 1 << 30})
}

// setClaimerTo makes p the holder of the set's claim.
func setClaimerTo(t *testing.T, s Store, id string, p Process) {
	t.Helper()
	switch st := s.(type) {
	case *FileStore:
		rewrite(t, filepath.Join(st.Dir(), id, StatusFile), func(m map[string]any) {
			m["claim"].(map[string]any)["by"] = p
		})
	case *NATSStore:
		ctx, cancel := st.ctx()
		defer cancel()
		e, err := st.kv.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var rec record
		_ = json.Unmarshal(e.Value(), &rec)
		rec.Status.Claim.By = p
		data, _ := json.Marshal(rec)
		if _, err := st.kv.Update(ctx, id, data, e.Revision()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStoreWaitPendingWokenByNewSet(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s, other := b.open(t, Options{}), b.open(t, Options{})
		// The waiter skips a decoy set; its first look at the decoy means it is watching (both
		// stores watch before they look), so the set created after that must wake it.
		decoy := createIn(t, other)
		done := waitPendingPast(s, decoy.ID, 10*time.Second)
		sess := createIn(t, other)
		if p := <-done; p == nil || p.ID != sess.ID {
			t.Fatalf("got %v", p)
		}
		if _, err := s.WaitPending(context.Background(), WaitPendingOptions{Timeout: time.Second, Skip: func(id string) bool { return id == sess.ID || id == decoy.ID }}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("skip: %v", err)
		}
	})
}

// A set removed while someone waits for it (by hand, or by a retention sweep elsewhere) ends the wait
// with ErrNotFound: gone.
func TestStoreGoneWhileWaiting(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s := b.open(t, Options{})
		sess := createIn(t, s)
		removed := false
		_, err := s.Wait(context.Background(), sess.ID, WaitOptions{Timeout: 10 * time.Second,
			ProgressEvery: time.Millisecond, Progress: onceWaiting(func() { b.remove(t, sess.ID); removed = true })})
		if !removed {
			t.Fatalf("the wait ended before the set was removed: %v", err)
		}
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("got %v", err)
		}
		if all, err := s.List(); err != nil || len(all) != 0 {
			t.Fatalf("list after removal: %v %v", all, err)
		}
	})
}

// A pending set whose asking process has exited is marked abandoned, never removed unseen; it goes
// one whole retention period later.
func TestStoreOwnerGoneIsAbandonedNotDeleted(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		c := &clock{}
		s := b.open(t, Options{Now: c.Now})
		sess := createIn(t, s)
		b.setOwner(t, sess.ID, Process{PID: 1 << 30})
		c.advance(24 * time.Hour)
		if n, err := s.Cleanup(time.Hour); err != nil || n != 0 {
			t.Fatalf("removed %d, %v", n, err)
		}
		got, err := s.Get(sess.ID)
		if err != nil || got.Status.Status != Abandoned || !strings.Contains(got.Status.Reason, "has exited") {
			t.Fatalf("%+v %v", got, err)
		}
		// An owner on another host is never taken for gone.
		far := createIn(t, s)
		b.setOwner(t, far.ID, Process{PID: 1 << 30, Host: "elsewhere.invalid"})
		if got, _ := s.Get(far.ID); got.Status.Status != Pending {
			t.Fatalf("remote owner: %s", got.Status.Status)
		}
		c.advance(24 * time.Hour)
		if n, err := s.Cleanup(time.Hour); err != nil || n != 1 {
			t.Fatalf("removed %d, %v", n, err)
		}
	})
}

func TestStoreCleanup(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		c := &clock{}
		s := b.open(t, Options{Now: c.Now})
		done := createIn(t, s)
		if _, err := s.Answer(done.ID, goodAnswers, ""); err != nil {
			t.Fatal(err)
		}
		pending := createIn(t, s)
		if n, err := s.Cleanup(time.Hour); err != nil || n != 0 {
			t.Fatalf("fresh: removed %d, %v", n, err)
		}
		c.advance(2 * time.Hour)
		if n, err := s.Cleanup(time.Hour); err != nil || n != 1 {
			t.Fatalf("removed %d, %v", n, err)
		}
		if _, err := s.Get(done.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("finished set kept: %v", err)
		}
		if got, err := s.Get(pending.ID); err != nil || got.Status.Status != Pending {
			t.Fatalf("pending set: %v", err)
		}
	})
}

func TestStoreAskFlow(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s, person := b.open(t, Options{}), b.open(t, Options{})
		created := make(chan *Session, 1)
		go func() {
			sess := <-created
			_, _ = person.Answer(sess.ID, goodAnswers, "")
		}()
		res, sess, err := s.Ask(context.Background(), mustSet(t, langSet), AskOptions{
			Source: "test", CallID: "call-1", Timeout: time.Minute, Retention: time.Hour,
			Created: func(s *Session) { created <- s },
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.CallID != "call-1" || res.SessionID != sess.ID || res.Status != Completed {
			t.Fatalf("%+v", res)
		}
		if !strings.HasPrefix(res.Text(), "Here are the user's answers:\n\n1. [Language]") {
			t.Fatalf("%s", res.Text())
		}
	})
}

// A detachable set whose call went away stays answerable on every store; the answer given on another
// machine is collected, once, by the repeated call.
func TestStoreDetachedSetCollectedByARepeatedCall(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s, person := b.open(t, Options{}), b.open(t, Options{})
		set := mustSet(t, langSet)
		ctx, cancel := context.WithCancel(context.Background())
		created := make(chan *Session, 1)
		go func() { <-created; cancel() }()
		if _, _, err := s.Ask(ctx, set, AskOptions{Source: "mcp", Detachable: true, Created: func(s *Session) { created <- s }}); !errors.Is(err, context.Canceled) {
			t.Fatalf("first call: %v", err)
		}
		found, err := FindDetached(person, set, "mcp")
		if err != nil || found == nil || found.Status.Status != Detached {
			t.Fatalf("detached set: %+v %v", found, err)
		}
		p, err := person.WaitPending(context.Background(), WaitPendingOptions{Timeout: 5 * time.Second})
		if err != nil || p.ID != found.ID {
			t.Fatalf("a detached set is not offered: %v %v", p, err)
		}
		if _, err := person.Answer(found.ID, goodAnswers, ""); err != nil {
			t.Fatal(err)
		}
		res, sess, err := s.Ask(context.Background(), set, AskOptions{Source: "mcp", Detachable: true, Timeout: time.Minute})
		if err != nil || sess.ID != found.ID || res.Status != Completed {
			t.Fatalf("repeated call: %+v %v", res, err)
		}
		if again, _ := FindDetached(s, set, "mcp"); again != nil {
			t.Fatal("an outcome was offered for collection twice")
		}
	})
}

// An asker qkit cannot see (another machine, or the same host name on another boot) is never taken
// for gone; its open set ends at its expiry instead, once the grace for its own call has passed.
func TestStoreUnseenAskerTimesOutAtItsExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		c := &clock{}
		s := b.open(t, Options{Now: c.Now})
		sess, err := s.Create(mustSet(t, langSet), CreateOptions{Source: "test", Timeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		b.setOwner(t, sess.ID, Process{PID: 1 << 30, Host: host, Boot: "another-boot"})
		if got, _ := s.Get(sess.ID); got.Status.Status != Pending {
			t.Fatalf("an asker on another boot was taken for gone: %s", got.Status.Status)
		}
		c.advance(time.Hour + expiryGrace/2)
		if got, _ := s.Get(sess.ID); got.Status.Status != Pending {
			t.Fatalf("ended within the grace: %s", got.Status.Status)
		}
		c.advance(expiryGrace)
		got, err := s.Get(sess.ID)
		if err != nil || got.Status.Status != TimedOut || !strings.Contains(got.Status.Reason, "no waiting call ended it") {
			t.Fatalf("%+v %v", got.Status, err)
		}
	})
}

// A terminal holding a claim dies: nothing is written, yet a waiting `questions wait` is offered the
// set once the claim has lapsed.
func TestStoreWaitPendingSeesAClaimLapseThatWritesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, b *backend) {
		s, other := b.open(t, Options{}), b.open(t, Options{})
		sess, term := claimedByTerminal(t, s)
		// A decoy asked later is listed after the claimed set: once the waiter has looked at it,
		// it has passed over the claimed set too.
		decoy := createIn(t, s)
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
	})
}

// claimedByTerminal creates a set in s claimed by a live process of this machine that stands for
// a person's terminal (it lives a minute unless killed, as the test does to end the claim).
func claimedByTerminal(t *testing.T, s Store) (*Session, *exec.Cmd) {
	t.Helper()
	sess := createIn(t, s)
	if _, _, err := s.Claim(sess.ID); err != nil {
		t.Fatal(err)
	}
	term := exec.Command("sleep", "60")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Process.Kill(); _ = term.Wait() })
	setClaimerTo(t, s, sess.ID, terminalProcess(term))
	return sess, term
}

// terminalProcess is term as a claim records the process that holds it.
func terminalProcess(term *exec.Cmd) Process {
	me := Self()
	return Process{PID: term.Process.Pid, Start: processStart(term.Process.Pid), Host: me.Host, Boot: me.Boot}
}

// onceWaiting is a wait's Progress callback that runs fn on the first tick only: by then the wait
// has read the set and watches it, so what fn does happens during the wait, not before it.
func onceWaiting(fn func()) func(time.Duration) {
	var once sync.Once
	return func(time.Duration) { once.Do(fn) }
}

// waitPendingPast starts a WaitPending on st that skips the decoy set and returns once it has
// looked at the decoy (so it is watching: both stores watch before they look); the channel gets
// what the wait returns.
func waitPendingPast(st Store, decoy string, timeout time.Duration) <-chan *Session {
	looked := make(chan struct{})
	var once sync.Once
	done := make(chan *Session, 1)
	go func() {
		p, _ := st.WaitPending(context.Background(), WaitPendingOptions{Timeout: timeout, Skip: func(id string) bool {
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
