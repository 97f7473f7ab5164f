package natsstore_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/natsstore"
	"github.com/qkit-cli/qkit/internal/questionsweb"
)

// TestWebPageOverNATS: the web page (internal/questionsweb) works unchanged on the NATS store. A
// set asked on one machine is shown on a page served from another machine's store, and the answer
// posted there reaches the asker's waiting call.
func TestWebPageOverNATS(t *testing.T) {
	srv, err := natstest.Start(natstest.Options{JetStream: true, StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	open := func() *natsstore.Store {
		st, err := natsstore.New(natsstore.Config{URL: srv.URL(), Installation: "web", Retention: time.Hour}, questions.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	asker, person := open(), open()

	page, err := questionsweb.New(person, questionsweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- page.Serve(ctx, ln, t.TempDir()) }()
	t.Cleanup(func() { stop(); <-served })
	base := page.BaseURL(ln.Addr())

	set, err := questions.ParseQuestionSet([]byte(`{"questions":[{"question":"Which language should we use?","header":"Language","options":[{"label":"Go"},{"label":"TypeScript"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := asker.Create(set, questions.CreateOptions{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan *questions.Session, 1)
	failed := make(chan error, 1)
	go func() {
		got, err := asker.Wait(context.Background(), sess.ID, questions.WaitOptions{Timeout: time.Minute})
		if err != nil {
			failed <- err
			return
		}
		waited <- got
	}()

	do := func(req *http.Request) (int, string) {
		t.Helper()
		req.Header.Set("Authorization", "Bearer "+page.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	get, _ := http.NewRequest(http.MethodGet, base, nil)
	if code, body := do(get); code != http.StatusOK || !strings.Contains(body, "Which language should we use?") || !strings.Contains(body, sess.ID) {
		t.Fatalf("the page (%d) does not show the set asked on the other machine:\n%.2000s", code, body)
	}
	form := url.Values{"q0": {"TypeScript"}}
	post, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/")+"/sets/"+sess.ID+"/answer", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("X-Qkit-Token", page.Token())
	if code, body := do(post); code != http.StatusOK || !strings.Contains(body, "Answer recorded") {
		t.Fatalf("answer: %d %s", code, body)
	}
	select {
	case got := <-waited:
		if got.Status.Status != questions.Completed || got.Answers == nil || len(got.Answers.Answers) != 1 || strings.Join(got.Answers.Answers[0].Selected, ",") != "TypeScript" {
			t.Fatalf("the asker got %+v %+v", got.Status, got.Answers)
		}
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(time.Minute):
		t.Fatal("the answer posted on the page did not reach the asker")
	}
}
