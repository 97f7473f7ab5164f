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

// The page's limits are the core's, counted in characters. A browser counts maxlength in UTF-16
// units, two for an emoji, so the fields allow twice the core's limit: a person typing emoji is not
// stopped at half of it. What reaches the core is judged by the core: the longest reason and free
// text of emoji are recorded, one character more is refused with the core's message and records
// nothing, and a reason posted without the script (line breaks as CRLF) counts each line break once.
func TestPageLimitsAreTheCoresInCharacters(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	_, page := f.pageWith(t, c, langSet, "mcp")
	for _, want := range []string{
		fmt.Sprintf(`<input type="text" name="q0_other" maxlength="%d"`, 2*questions.MaxOtherTextLen),
		fmt.Sprintf(`<textarea name="reason" maxlength="%d"`, 2*questions.MaxReasonLen),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s:\n%s", want, page)
		}
	}

	refused := func(action string, form url.Values, msg string) {
		t.Helper()
		sess := f.ask(t)
		form.Set("csrf", f.csrf)
		if r := post(t, c, f.base+"sets/"+sess.ID+"/"+action, form, nil); r.code != 400 || !strings.Contains(r.Msg, msg) {
			t.Errorf("%s one character over the limit: %+v, want 400 with %q", action, r, msg)
		}
		if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending || got.Answers != nil {
			t.Errorf("a refused %s changed the set: %+v", action, got.Status)
		}
	}
	refused("reject", url.Values{"reason": {strings.Repeat("😀", questions.MaxReasonLen+1)}},
		fmt.Sprintf("reason: at most %d characters, not %d", questions.MaxReasonLen, questions.MaxReasonLen+1))
	refused("answer", url.Values{"q0_other": {strings.Repeat("😀", questions.MaxOtherTextLen+1)}, "q1": {"Lint"}},
		fmt.Sprintf("at most %d characters", questions.MaxOtherTextLen))

	accepted := func(action string, form url.Values) *questions.Session {
		t.Helper()
		sess := f.ask(t)
		form.Set("csrf", f.csrf)
		if r := post(t, c, f.base+"sets/"+sess.ID+"/"+action, form, nil); r.code != 200 {
			t.Fatalf("%s at the limit: %+v", action, r)
		}
		got, err := f.st.Get(sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	other := strings.Repeat("😀", questions.MaxOtherTextLen)
	if got := accepted("answer", url.Values{"q0_other": {other}, "q1": {"Lint"}}); got.Answers.Answers[0].Other != other {
		t.Errorf("free text at the limit stored as %d characters", len([]rune(got.Answers.Answers[0].Other)))
	}
	reason := strings.Repeat("😀", questions.MaxReasonLen)
	if got := accepted("reject", url.Values{"reason": {reason}}); got.Status.RejectionReason != reason {
		t.Errorf("a reason at the limit stored as %d characters", len([]rune(got.Status.RejectionReason)))
	}
	// Half the limit in lines of one character: at the limit counting a line break once, over it
	// counting CRLF as two.
	lines := strings.Repeat("a\r\n", questions.MaxReasonLen/2-1) + "aa"
	want := strings.ReplaceAll(lines, "\r\n", "\n")
	if n := len([]rune(want)); n != questions.MaxReasonLen {
		t.Fatalf("the test's reason has %d characters", n)
	}
	if got := accepted("reject", url.Values{"reason": {lines}}); got.Status.RejectionReason != want {
		t.Errorf("a reason posted with CRLF stored as %q", got.Status.RejectionReason)
	}
}
