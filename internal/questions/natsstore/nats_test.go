package natsstore

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/internal/lifecycle"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

func loadConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	env["QKIT_HOME"] = t.TempDir()
	c, err := config.Load(config.LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// freeURL is a loopback address nothing listens on.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return "nats://127.0.0.1:" + strconv.Itoa(port)
}

// With questions.store=nats and no server, Open fails naming the URL, and nothing falls back to files.
func TestNATSUnreachableAtStartNamesTheURL(t *testing.T) {
	url := freeURL(t)
	cfg := loadConfig(t, map[string]string{"QKIT_QUESTIONS_STORE": "nats", "QKIT_QUESTIONS_NATS_URL": url})
	_, err := Open(cfg, questions.Options{})
	var unreach *UnreachableError
	if !errors.As(err, &unreach) || !strings.Contains(err.Error(), "the NATS server at "+url) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Paths.State, "questions")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file store was opened instead: %v", err)
	}
}

func TestNATSWithoutJetStreamSaysSo(t *testing.T) {
	srv := startNATSWith(t, false)
	_, err := New(Config{URL: srv.URL(), Installation: "x"}, questions.Options{})
	if err == nil || !strings.Contains(err.Error(), srv.URL()) || !strings.Contains(err.Error(), "JetStream is not enabled") {
		t.Fatalf("got %v", err)
	}
}

func TestNATSConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Installation: "x"}, "questions.nats_url is empty"},
		{Config{URL: "nats://127.0.0.1:1", Installation: "a.b"}, `installation name "a.b"`},
		{Config{URL: "nats://127.0.0.1:1", Installation: "x", TLSCert: "c.pem"}, "go together"},
	} {
		if _, err := New(tt.cfg, questions.Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v", tt.cfg, err)
		}
	}
}

// Open with the settings: the bucket is named after questions.installation and created with the
// retention as its TTL; a second machine with the same settings opens the same bucket.
func TestNATSOpenCreatesTheBucket(t *testing.T) {
	srv := startNATS(t)
	env := map[string]string{"QKIT_QUESTIONS_STORE": "nats", "QKIT_QUESTIONS_NATS_URL": srv.URL(),
		"QKIT_QUESTIONS_INSTALLATION": "team-a", "QKIT_QUESTIONS_RETENTION": "36h"}
	st, err := Open(loadConfig(t, env), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ns := st.(*Store)
	if ns.Bucket() != "qkit-questions-team-a" || !strings.Contains(st.Location(), srv.URL()) {
		t.Fatalf("%s %s", ns.Bucket(), st.Location())
	}
	status, err := ns.kv.Status(context.Background())
	if err != nil || status.TTL() != 36*time.Hour || status.History() != 1 {
		t.Fatalf("%v %v", status, err)
	}
	sess := storetest.CreateIn(t, st)
	other, err := Open(loadConfig(t, env), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, err := other.Get(sess.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("%v %v", got, err)
	}
}

// The server restarts while a wait is on. An answer given right after the restart (before the waiter
// has reconnected) and one given after it has are both returned.
func TestNATSRestartMidWaitLosesNothing(t *testing.T) {
	t.Parallel()
	srv := startNATS(t)
	// The asker reaches the server through a gate, shut from before the restart until the early
	// answer is in: it cannot reconnect first, however slow the restart.
	g := startGate(t, srv)
	asker, err := New(Config{URL: g.URL(), Installation: "restart", ReconnectWait: 50 * time.Millisecond}, questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer asker.Close()
	for _, early := range []bool{true, false} {
		sess := storetest.CreateIn(t, asker)
		type result struct {
			sess *questions.Session
			err  error
		}
		done := make(chan result, 1)
		go func() {
			s, err := asker.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute})
			done <- result{s, err}
		}()
		// The watcher runs (not only the wait that asked for it): the restart comes mid-watch.
		waitUntil(t, "the wait's watcher to run", func() bool { return natsWatching(asker) })
		reconnects := asker.nc.Stats().Reconnects
		if early {
			g.setShut(true)
		}
		srv.restart()
		if early {
			waitUntil(t, "the asker to lose the server", func() bool { return !asker.nc.IsConnected() })
		} else {
			// The asker is connected again, so its watcher is the one that delivers.
			waitUntil(t, "the asker to reconnect", func() bool {
				return asker.nc.Stats().Reconnects > reconnects && asker.nc.IsConnected()
			})
		}
		person := openNATS(t, srv, "restart", questions.Options{})
		if _, err := person.Answer(sess.ID, storetest.GoodAnswers, ""); err != nil {
			t.Fatalf("early=%v: answer: %v", early, err)
		}
		if early {
			g.setShut(false)
		}
		select {
		case r := <-done:
			if r.err != nil || r.sess.Status.Status != questions.Completed || r.sess.Answers == nil {
				t.Fatalf("early=%v: %+v %v", early, r.sess, r.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("early=%v: the answer given across the restart never reached the wait", early)
		}
	}
}

// A record that is not what qkit writes is shown as abandoned with why, is left as it is, and does not
// hide the other sets.
func TestNATSMalformedRecordIsAbandonedNotHidden(t *testing.T) {
	srv := startNATS(t)
	s := openNATS(t, srv, "bad", questions.Options{})
	good := storetest.CreateIn(t, s)
	for _, bad := range []string{`{"request":`, `{"status":{"status":"weird"}}`} {
		id := uuid.NewString()
		if _, err := s.kv.Create(context.Background(), id, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(id)
		if err != nil || got.Status.Status != questions.Abandoned || got.Status.Reason == "" {
			t.Fatalf("%s: %+v %v", bad, got, err)
		}
		var closed *questions.ClosedError
		if _, err := s.Answer(id, storetest.GoodAnswers, ""); !errors.As(err, &closed) {
			t.Fatalf("%s: answer: %v", bad, err)
		}
		e, _ := s.kv.Get(context.Background(), id)
		if string(e.Value()) != bad {
			t.Fatalf("the record was rewritten: %s", e.Value())
		}
		var ended *questions.EndedError
		if _, err := s.Wait(context.Background(), id, questions.WaitOptions{}); !errors.As(err, &ended) || ended.Status != questions.Abandoned {
			t.Fatalf("wait: %v", err)
		}
	}
	// Keys that are not set ids are ignored.
	if _, err := s.kv.Create(context.Background(), "not-a-set", []byte("x")); err != nil {
		t.Fatal(err)
	}
	all, err := s.List()
	if err != nil || len(all) != 3 || all[0].ID != good.ID && all[1].ID != good.ID && all[2].ID != good.ID {
		t.Fatalf("%v %v", all, err)
	}
}

// natsWatching reports whether the store's bucket watcher runs: a wait started before it may still
// be reading, not watching.
func natsWatching(s *Store) bool {
	on := false
	s.hubs.Do(func(h *natsHub) { on = h.watching.Load() })
	return on
}

// A set someone still waits for outlives the bucket's TTL: the wait rewrites it in time.
func TestNATSWaitKeepsItsSetAlive(t *testing.T) {
	t.Parallel()
	srv := startNATS(t)
	s, err := New(Config{URL: srv.URL(), Installation: "ttl", Retention: time.Second}, questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess := storetest.CreateIn(t, s)
	forgotten := storetest.CreateIn(t, s) // nobody waits for this one
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Wait(ctx, sess.ID, questions.WaitOptions{})
		done <- err
	}()
	removed := func(id string) bool { _, err := s.Get(id); return errors.Is(err, questions.ErrNotFound) }
	waitUntil(t, "the TTL to remove the forgotten set", func() bool { return removed(forgotten.ID) })
	// A second forgotten set, created now, is removed only once the TTL has passed again: by then
	// the waited-for set would have been removed twice over, had the wait not rewritten it.
	later := storetest.CreateIn(t, s)
	waitUntil(t, "the TTL to remove the later forgotten set", func() bool { return removed(later.ID) })
	if got, err := s.Get(sess.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("the waited-for set: %+v %v", got, err)
	}
	cancel()
	<-done
}

// Concurrent lists share passes over the bucket, yet each sees every set created before it was called.
func TestNATSConcurrentListsSeeWhatCameBefore(t *testing.T) {
	srv := startNATS(t)
	s := openNATS(t, srv, "lists", questions.Options{})
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Go(func() {
			mine := storetest.CreateIn(t, s)
			all, err := s.List()
			if err != nil {
				t.Error(err)
				return
			}
			for _, x := range all {
				if x.ID == mine.ID {
					x.Status.Reason = "changed by one caller" // must not leak into another caller's copy
					return
				}
			}
			t.Errorf("a list called after creating %s does not show it", mine.ID)
		})
	}
	wg.Wait()
	all, _ := s.List()
	for _, x := range all {
		if x.Status.Reason != "" {
			t.Fatal("callers share sessions")
		}
	}
}

// entry is a key-value entry as the bucket would hand it over.
type entry struct {
	key   string
	value []byte
	rev   uint64
}

func (e entry) Bucket() string                  { return "qkit-questions-fuzz" }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.value }
func (e entry) Revision() uint64                { return e.rev }
func (e entry) Created() time.Time              { return time.Unix(1700000000, 0) }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }

// FuzzNATSRecord: any value another client puts in the bucket decodes without a panic, and a set is
// only taken as sound when its request, status and answers hold together.
func FuzzNATSRecord(f *testing.F) {
	s := &Store{now: time.Now}
	good := lifecycle.NewSession(time.Now, &questions.QuestionSet{Questions: storetest.MustSet(f, storetest.LangSet).Questions}, questions.CreateOptions{Source: "mcp"})
	data, _ := encodeRecord(good)
	f.Add(good.ID, data)
	good.Status.Status, good.Answers = questions.Completed, &questions.Answers{Answers: storetest.GoodAnswers}
	data, _ = encodeRecord(good)
	f.Add(good.ID, data)
	f.Add(good.ID, []byte(`{"request":null,"status":{"status":"completed"}}`))
	f.Add(good.ID, []byte(`{"status":{"status":"weird"}}`))
	f.Add("not-a-uuid", []byte(`[]`))
	f.Fuzz(func(t *testing.T, id string, value []byte) {
		sess := s.decode(id, entry{key: id, value: value, rev: 7})
		if sess.ID != id || sess.rev != 7 {
			t.Fatalf("id or revision lost: %+v", sess)
		}
		if !lifecycle.KnownState(sess.Status.Status) {
			t.Fatalf("unknown status %q taken", sess.Status.Status)
		}
		if sess.Problem == "" {
			if sess.Request == nil || sess.Request.SessionID != id {
				t.Fatal("a set without its request was taken as sound")
			}
			if sess.Status.Status == questions.Completed && sess.Answers == nil {
				t.Fatal("a completed set without answers was taken as sound")
			}
			if sess.Answers != nil {
				if _, err := questions.CheckAnswers(sess.Set(), sess.Answers.Answers); err != nil {
					t.Fatalf("invalid answers taken: %v", err)
				}
			}
		} else if sess.Status.Status != questions.Abandoned || sess.Answers != nil {
			t.Fatalf("a broken set is not shown abandoned: %+v", sess.Status)
		}
	})
}

// The server is away when the wait's time runs out: the wait still ends at its timeout, as timed
// out, and says the set could not be marked; once the server is back the set is still there, open.
// (The server is gone, as the client sees it, before the wait starts: stopped after it, it could
// still be up at the timeout on a loaded machine.)
func TestNATSTimeoutWhileTheServerIsAway(t *testing.T) {
	t.Parallel()
	srv := startNATS(t)
	s := openNATS(t, srv, "away", questions.Options{})
	sess := storetest.CreateIn(t, s)
	srv.stop()
	waitUntil(t, "the client to lose the server", s.nc.IsReconnecting)
	done := make(chan error, 1)
	go func() {
		_, err := s.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: 500 * time.Millisecond})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the wait outlived its timeout while the server was away")
	}
	var ended *questions.EndedError
	if !errors.As(err, &ended) || ended.Status != questions.TimedOut || !strings.Contains(ended.Reason, "could not be marked timed_out") {
		t.Fatalf("got %v", err)
	}
	srv.up()
	other := openNATS(t, srv, "away", questions.Options{})
	if got, err := other.Get(sess.ID); err != nil || !got.Status.Status.Open() {
		t.Fatalf("%+v %v", got, err)
	}
}
