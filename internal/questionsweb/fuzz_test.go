package questionsweb

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
)

// FuzzAnswerForm posts arbitrary form bodies as answers: never a crash, only the documented
// statuses, and whatever was accepted is a valid answer to the set.
func FuzzAnswerForm(f *testing.F) {
	f.Add("q0=Go&q1=Lint&q1=Docs")
	f.Add("q0=Go&q0_other=Rust&q1_other=x")
	f.Add("q00=Go&q1=&q-1=x&q0_other_other=1")
	f.Add("q0=%ff%fe&q1=Lint;q9=1")
	st, err := questions.NewFileStore(filepath.Join(f.TempDir(), "questions"), questions.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	srv, err := New(st, Options{})
	if err != nil {
		f.Fatal(err)
	}
	set, _ := questions.ParseQuestionSet([]byte(langSet))
	f.Fuzz(func(t *testing.T, body string) {
		sess, err := st.Create(set, questions.CreateOptions{Source: "fuzz"})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/sets/"+sess.ID+"/answer", strings.NewReader(body+"&csrf="+srv.Token()))
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
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
