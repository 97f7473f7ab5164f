package cmd

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
)

// A repeated MCP call that takes a detached set over renews its expiry (in the status, not the
// request). questions list --json and show --json report the expiry the core goes by
// (Session.ExpiresAt), not the first call's.
func TestQuestionsJSONShowsTheExpiryOfATakeOver(t *testing.T) {
	t.Setenv("QKIT_HOME", t.TempDir())
	streams, _, out, _ := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "dev"})
	if err := a.Load(config.LoadOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	st, err := openQuestions(a)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set, err := questions.ParseQuestionSet([]byte(`{"questions":[{"question":"Which language?","header":"Language","options":[{"label":"Go"},{"label":"Rust"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Create(set, questions.CreateOptions{Source: "mcp", Timeout: time.Minute, Detachable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Detach(sess.ID, "the call was cancelled"); err != nil {
		t.Fatal(err)
	}
	taken, err := st.Attach(sess.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := taken.ExpiresAt()
	if want == nil || sess.Request.ExpiresAt == nil || !want.After(*sess.Request.ExpiresAt) {
		t.Fatalf("the take-over did not renew the expiry: %v (asked with %v)", want, sess.Request.ExpiresAt)
	}

	if err := runQuestionsList(a, &questionsListOptions{asJSON: true}); err != nil {
		t.Fatal(err)
	}
	var listed []sessionJSON
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("list --json: %v %s", err, out.String())
	}
	if got := listed[0].ExpiresAt; got == nil || !got.Equal(*want) {
		t.Errorf("list --json: expiresAt %v, want %v", got, want)
	}
	out.Reset()
	if err := runQuestionsShow(a, &questionsShowOptions{asJSON: true}, []string{sess.ShortID()}); err != nil {
		t.Fatal(err)
	}
	var shown sessionDetailJSON
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
		t.Fatalf("show --json: %v %s", err, out.String())
	}
	if got := shown.ExpiresAt; got == nil || !got.Equal(*want) {
		t.Errorf("show --json: expiresAt %v, want %v", got, want)
	}
}
