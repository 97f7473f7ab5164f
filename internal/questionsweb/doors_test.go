package questionsweb

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
)

// Text the assistant wrote is shown on the page as `qkit questions show` shows it: a bidirectional
// override (which would reorder what the person reads) is written as an escape. The form still
// posts the stored label, so choosing that option answers the set.
func TestPageShowsOverridesEscaped(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess, page := f.pageWith(t, c, `{"questions":[{"question":"Pick \u202eone","header":"Pick\u202e","options":[
		{"label":"Keep\u202eevil","description":"safe\u202etxt"},{"label":"Drop"}]}]}`, "mcp\u202e")
	for _, want := range []string{
		`<span class="tag">Pick\u202e</span> Pick \u202eone</legend>`,
		`<span class="label">Keep\u202eevil</span> <small>safe\u202etxt</small>`,
		`by mcp\u202e`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q:\n%s", want, page)
		}
	}
	// The form's limits are the core's.
	for _, want := range []string{fmt.Sprintf(`maxlength="%d"`, questions.MaxOtherTextLen), fmt.Sprintf(`maxlength="%d"`, questions.MaxReasonLen)} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	// The one U+202E left is the stored label in the option's value, which the browser posts back.
	if n := strings.Count(page, "\u202e"); n != 1 || !strings.Contains(page, "value=\"Keep\u202eevil\"") {
		t.Errorf("U+202E is on the page %d times, want once, in the option's value:\n%s", n, page)
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", url.Values{"csrf": {f.csrf}, "q0": {"Keep\u202eevil"}}, nil); r.code != 200 {
		t.Fatalf("answering with the posted value: %+v", r)
	}
}

// The largest answer the core accepts is accepted through the page too: four multiple-choice
// questions with every option chosen, each label and each free text as long as allowed and made
// of the characters that take the most bytes URL-encoded (4-byte UTF-8, 12 bytes as %XX). So is the
// longest reason. `questions answer --other` and the MCP tool take these; the page must not refuse
// them as too large.
func TestLargestValidAnswersAreAccepted(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	set := &questions.QuestionSet{}
	form := url.Values{"csrf": {f.csrf}}
	for i := range questions.MaxQuestions {
		q := questions.Question{Question: "Which?", Header: "Q" + strconv.Itoa(i), MultiSelect: true}
		name := "q" + strconv.Itoa(i)
		for j := range questions.MaxOptions {
			label := strings.Repeat(string(rune(0x1F600+j)), questions.MaxLabelLen)
			q.Options = append(q.Options, questions.Option{Label: label})
			form.Add(name, label)
		}
		set.Questions = append(set.Questions, q)
		form.Set(name+"_other", strings.Repeat("😀", questions.MaxOtherTextLen))
	}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	sess, err := f.st.Create(set, questions.CreateOptions{Source: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", form, nil); r.code != 200 {
		t.Fatalf("the largest valid answer (%d bytes posted): %+v", len(form.Encode()), r)
	}
	got, err := f.st.Get(sess.ID)
	if err != nil || got.Status.Status != questions.Completed || len(got.Answers.Answers[3].Selected) != questions.MaxOptions {
		t.Fatalf("stored %+v %v", got.Status, err)
	}
	// The case: 7,400 CJK characters of free text (9 bytes each encoded).
	sess = f.ask(t)
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", f.answerForm("q1_other", strings.Repeat("答", 7400)), nil); r.code != 200 {
		t.Fatalf("7,400 CJK characters: %+v", r)
	}
	sess = f.ask(t)
	reason := url.Values{"csrf": {f.csrf}, "reason": {strings.Repeat("😀", questions.MaxReasonLen)}}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/reject", reason, nil); r.code != 200 {
		t.Fatalf("the longest reason: %+v", r)
	}
}
