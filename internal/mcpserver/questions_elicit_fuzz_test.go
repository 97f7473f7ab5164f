package mcpserver

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// FuzzFormContent feeds what a client's form sends back (any JSON object, any action) to the set
// it was shown for: never a crash; an accepted answer is a valid one, a decline is a rejection, an
// answer that does not fit asks again and leaves the set open, anything else leaves it open.
func FuzzFormContent(f *testing.F) {
	f.Add(`{"q1":"Go","q2":["Lint","Docs"]}`, "accept")
	f.Add(`{"q1":"Go","q1_other":"and Rust","q2":[]}`, "accept")
	f.Add(`{"q1":["Go","TypeScript"],"q2":"Lint","q3":1}`, "accept")
	f.Add(`{"q1_other":"anything","q2_other":"else"}`, "accept")
	f.Add(`{}`, "decline")
	f.Add(`{"q1":"Go"}`, "cancel")
	st, err := dirstore.New(filepath.Join(f.TempDir(), "questions"), questions.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	set, err := questions.ParseQuestionSet([]byte(`{"questions":[
		{"question":"Which language should we use?","header":"Language","options":[{"label":"Go"},{"label":"TypeScript"}]},
		{"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Lint"},{"label":"Docs"}]}]}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content, action string) {
		var m map[string]any
		if json.Unmarshal([]byte(content), &m) != nil {
			return
		}
		sess, err := st.Create(set, questions.CreateOptions{Source: "mcp", Detachable: true})
		if err != nil {
			t.Fatal(err)
		}
		retry, err := settleForm(st, sess.ID, set, &mcp.ElicitResult{Action: action, Content: m})
		if err != nil {
			t.Fatalf("settleForm(%s, %q): %v", content, action, err)
		}
		got, err := st.Get(sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch status := got.Status.Status; {
		case retry != "":
			if action != "accept" || status != questions.Pending {
				t.Fatalf("asks again after %q, set %s", action, status)
			}
		case status == questions.Completed:
			if action != "accept" {
				t.Fatalf("answered by %q", action)
			}
			if _, err := questions.CheckAnswers(got.Set(), got.Answers.Answers); err != nil {
				t.Fatalf("stored an invalid answer from %s: %v", content, err)
			}
		case status == questions.Rejected:
			if action != "decline" {
				t.Fatalf("rejected by %q", action)
			}
		case status == questions.Pending:
			if action == "accept" || action == "decline" {
				t.Fatalf("%q left the set pending without asking again", action)
			}
		default:
			t.Fatalf("%q made the set %s", action, status)
		}
	})
}
