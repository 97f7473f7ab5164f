package questionsweb

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// FuzzAnswerForm posts arbitrary form bodies as answers, or as rejections: never a crash, only the
// documented statuses, and whatever was accepted is a valid answer to the set (or a rejection
// carrying the posted reason).
func FuzzAnswerForm(f *testing.F) {
	f.Add("q0=Go&q1=Lint&q1=Docs", false)
	f.Add("q0=Go&q0_other=Rust&q1_other=x", false)
	f.Add("q00=Go&q1=&q-1=x&q0_other_other=1", false)
	f.Add("q0=%ff%fe&q1=Lint;q9=1", false)
	f.Add("reason=not+now", true)
	f.Add("reason=a&reason=b&q0=Go", true)
	f.Add("q0=Go&q0_other=%22%3E%3C%2Finput%3E%0D%0Ax%00&q1_other=%ff", false)
	f.Add("reason=%0A%3C%2Ftextarea%3E%0D%0A%0Dx&q1=Lint", true)
	st, srv := fuzzServer(f)
	set, _ := questions.ParseQuestionSet([]byte(langSet))
	f.Fuzz(func(t *testing.T, body string, reject bool) {
		sess, err := st.Create(set, questions.CreateOptions{Source: "fuzz"})
		if err != nil {
			t.Fatal(err)
		}
		action := "answer"
		if reject {
			action = "reject"
		}
		req := httptest.NewRequest("POST", "/sets/"+sess.ID+"/"+action, strings.NewReader(body+"&csrf="+srv.Token()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		got, err := st.Get(sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Code {
		case http.StatusOK:
			if reject {
				// The store keeps the reason without its surrounding space.
				if want := strings.TrimSpace(req.PostForm.Get("reason")); got.Status.Status != questions.Rejected || got.Status.RejectionReason != want {
					t.Fatalf("200 but %s, reason %q (posted %q)", got.Status.Status, got.Status.RejectionReason, want)
				}
				return
			}
			if got.Status.Status != questions.Completed {
				t.Fatalf("200 but %s", got.Status.Status)
			}
			if _, err := questions.CheckAnswers(got.Set(), got.Answers.Answers); err != nil {
				t.Fatalf("accepted an invalid answer: %v", err)
			}
		case http.StatusBadRequest:
			if got.Status.Status != questions.Pending {
				t.Fatalf("400 but %s", got.Status.Status)
			}
			// Posted without the script, a refused form whose fields could be read comes back
			// with the texts typed in their fields, as a browser reads them.
			if page := rec.Body.String(); strings.Contains(page, ` id="set-`+sess.ID+`"`) {
				set := section(t, page, sess.ID)
				if reject {
					if got, want := textareas(set), asBrowserReads(req.PostForm.Get("reason")); len(got) != 1 || asBrowserReads(got[0]) != want {
						t.Fatalf("the reason %q came back as %q", want, got)
					}
					return
				}
				for _, name := range []string{"q0_other", "q1_other"} {
					if got, want := inputValue(t, set, name), asBrowserReads(req.PostForm.Get(name)); asBrowserReads(got) != want {
						t.Fatalf("%s %q came back as %q", name, want, got)
					}
				}
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// asBrowserReads is text as a browser reads it from a page: line breaks as LF, and what is not
// UTF-8 or is NUL as U+FFFD.
func asBrowserReads(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// FuzzAccess sends requests with arbitrary Host, cookie, bearer and ?token= values: without the
// token they are refused (never the page, never the secret), and a Host that is not a loopback name
// is refused on a loopback address whatever it carries.
func FuzzAccess(f *testing.F) {
	f.Add("127.0.0.1:8080", "", "", "")
	f.Add("localhost", "qkit_questions_0=abc", "Bearer ", "wrong")
	f.Add("[::1]:1", "", "Bearer x", "")
	f.Add("evil.example:80", "", "", "")
	f.Add("127.0.0.1.evil.example", "qkit_questions_0=", "bearer", "%00")
	_, srv := fuzzServer(f)
	srv.loopback, srv.cookie = true, "qkit_questions_0"
	f.Fuzz(func(t *testing.T, host, cookie, auth, token string) {
		target := "/?token=" + url.QueryEscape(token)
		if token == "" {
			target = "/"
		}
		req := httptest.NewRequest("GET", target, nil)
		req.Host = host
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), srv.Token()) || strings.Contains(rec.Header().Get("Location"), srv.Token()) {
			t.Fatalf("the token leaked: %d %q", rec.Code, rec.Body)
		}
		if !loopbackHost(host) {
			if rec.Code != http.StatusMisdirectedRequest {
				t.Fatalf("Host %q: %d", host, rec.Code)
			}
			return
		}
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("without the token (host %q cookie %q auth %q token %q): %d", host, cookie, auth, token, rec.Code)
		}
	})
}

// fuzzServer is a page over a fresh file store, not listening: the targets call its handler.
func fuzzServer(f *testing.F) (*dirstore.Store, *Server) {
	st, err := dirstore.New(filepath.Join(f.TempDir(), "questions"), questions.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	srv, err := New(st, Options{})
	if err != nil {
		f.Fatal(err)
	}
	return st, srv
}
