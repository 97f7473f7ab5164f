package questionsweb

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
)

// postPlain posts form as a browser without the script does (no Accept: application/json) and
// returns the status and the page it got back.
func postPlain(t *testing.T, c *http.Client, target string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("reply to %s is %s", target, ct)
	}
	return res.StatusCode, string(body)
}

// section is the part of page that shows the set id.
func section(t *testing.T, page, id string) string {
	t.Helper()
	start := strings.Index(page, `<section class="set`)
	for start >= 0 {
		end := strings.Index(page[start:], "</section>")
		if end < 0 {
			break
		}
		s := page[start : start+end]
		if strings.Contains(s, ` id="set-`+id+`"`) {
			return s
		}
		next := strings.Index(page[start+end:], `<section class="set`)
		if next < 0 {
			break
		}
		start += end + next
	}
	t.Fatalf("the page shows no set %s:\n%s", id, page)
	return ""
}

// inputValue is the value a browser gives the input named name in s.
func inputValue(t *testing.T, s, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<input [^>]*name="` + regexp.QuoteMeta(name) + `"[^>]*>`).FindString(s)
	if m == "" {
		t.Fatalf("no input %s in:\n%s", name, s)
	}
	v := regexp.MustCompile(` value="([^"]*)"`).FindStringSubmatch(m)
	if v == nil {
		return ""
	}
	return html.UnescapeString(v[1])
}

// textareas are the values a browser gives the text areas in s, in order: the first line break
// after the opening tag is not part of the value, and character references are decoded.
func textareas(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<textarea[^>]*>(.*?)</textarea>`).FindAllStringSubmatch(s, -1) {
		out = append(out, html.UnescapeString(strings.TrimPrefix(m[1], "\n")))
	}
	return out
}

// checked are the values of the options checked in s.
func checked(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<input type="(?:radio|checkbox)"[^>]*value="([^"]*)" checked>`).FindAllStringSubmatch(s, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// hostileWords is what a person might type that must stay text on the page given back.
const hostileWords = `"><script>alert(1)</script> & </textarea><b>bold</b>`

// An answer refused without the script gives the page back with what was posted: the options
// chosen checked, the free text in its field (as text, however it looks), the core's message at the
// set. The other sets show as usual, the form still carries the page's form value, and the
// corrected answer is recorded.
func TestRefusedAnswerWithoutScriptKeepsWhatWasTyped(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	other := f.ask(t)
	target := f.base + "sets/" + sess.ID + "/answer"
	long := hostileWords + strings.Repeat("é", questions.MaxOtherTextLen)
	code, page := postPlain(t, c, target, url.Values{"csrf": {f.csrf}, "q0_other": {long}, "q1": {"Lint", "Docs"}, "q1_other": {"and CI"}})
	if code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400:\n%s", code, page)
	}
	set := section(t, page, sess.ID)
	msg := fmt.Sprintf("at most %d characters", questions.MaxOtherTextLen)
	if !strings.Contains(set, msg) || !strings.Contains(set, `<p class="msg err"`) {
		t.Errorf("the set does not show the core's message %q:\n%s", msg, set)
	}
	if got := inputValue(t, set, "q0_other"); got != long {
		t.Errorf("the free text given back is %.60q…, want what was typed", got)
	}
	if got := inputValue(t, set, "q1_other"); got != "and CI" {
		t.Errorf("the second free text given back is %q", got)
	}
	if got := checked(set); strings.Join(got, ",") != "Lint,Docs" {
		t.Errorf("checked %q, want Lint and Docs", got)
	}
	if got := inputValue(t, set, "csrf"); got != f.csrf {
		t.Errorf("the form carries %q, not the page's form value", got)
	}
	// The value above reads back whole only if its quote is escaped; no tag typed is markup.
	for _, raw := range []string{"<script>", "<b>bold"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds the typed %q as markup", raw)
		}
	}
	if !strings.Contains(page, `<p class="notice" role="alert">`) || !strings.Contains(page, `href="#set-`+sess.ID+`"`) {
		t.Errorf("the page does not point to the refused set:\n%s", page)
	}
	// The other set is shown as the page always shows it.
	plain := section(t, page, other.ID)
	if checked(plain) != nil || inputValue(t, plain, "q0_other") != "" || strings.Contains(plain, "err") || strings.Contains(plain, "data-dirty") {
		t.Errorf("the other set shows something of the refused answer:\n%s", plain)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending || got.Answers != nil {
		t.Fatalf("a refused answer changed the set: %+v", got.Status)
	}

	// Shortened, the answer the page gave back is recorded.
	code, page = postPlain(t, c, target, url.Values{"csrf": {inputValue(t, set, "csrf")}, "q0_other": {hostileWords}, "q1": checked(set)})
	if code != http.StatusOK || !strings.Contains(page, "Answer recorded.") {
		t.Fatalf("the corrected answer: %d\n%s", code, page)
	}
	got, _ := f.st.Get(sess.ID)
	if res := questions.ResultOf(got); res.Answers[0].Other != hostileWords || len(res.Answers[1].Selected) != 2 {
		t.Fatalf("stored %+v", res)
	}
}

// Every refusal of an answer the store or the page makes (a choice that does not fit, a field the
// set does not ask for) gives the page back; with the script, the same refusals still get JSON.
func TestEveryRefusedAnswerWithoutScriptKeepsWhatWasTyped(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	target := f.base + "sets/" + sess.ID + "/answer"
	for _, tt := range []struct {
		form url.Values
		want string
	}{
		{f.answerForm("q0_other", "Rust <3"), "is single-choice"},
		{f.answerForm("q7", "x", "q0_other", "Rust <3"), `field &#34;q7&#34;`},
		{f.answerForm("q0_other", "Rust <3\xff"), "must be valid UTF-8"},
	} {
		code, page := postPlain(t, c, target, tt.form)
		set := section(t, page, sess.ID)
		if code != http.StatusBadRequest || !strings.Contains(set, tt.want) || !strings.Contains(set, "nothing was recorded") {
			t.Errorf("%v: %d, the set shows no %q:\n%s", tt.form, code, tt.want, set)
		}
		if got := inputValue(t, set, "q0_other"); !strings.HasPrefix(got, "Rust <3") {
			t.Errorf("%v: the free text given back is %q", tt.form, got)
		}
		if got := checked(set); strings.Join(got, ",") != "Go,Lint,Docs" {
			t.Errorf("%v: checked %q", tt.form, got)
		}
		if r := post(t, c, target, tt.form, nil); r.code != http.StatusBadRequest || !strings.Contains(r.Msg, html.UnescapeString(tt.want)) {
			t.Errorf("%v with the script: %+v", tt.form, r)
		}
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending || got.Answers != nil {
		t.Fatalf("a refused answer changed the set: %+v", got.Status)
	}
}

// A rejection refused without the script gives the page back with the reason in its field
// (line breaks, a leading one too, and markup kept as typed) and that part of the form unfolded.
func TestRefusedRejectionWithoutScriptKeepsTheReason(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	reason := "\n" + hostileWords + "\r\nsecond line" + strings.Repeat("x", questions.MaxReasonLen)
	code, page := postPlain(t, c, f.base+"sets/"+sess.ID+"/reject", url.Values{"csrf": {f.csrf}, "reason": {reason}})
	if code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400:\n%s", code, page)
	}
	set := section(t, page, sess.ID)
	if !strings.Contains(set, fmt.Sprintf("reason: at most %d characters", questions.MaxReasonLen)) {
		t.Errorf("the set does not show the core's message:\n%s", set)
	}
	if !strings.Contains(set, "<details open>") {
		t.Errorf("the rejection's part is folded:\n%s", set)
	}
	// The browser reads CRLF in a text area as LF, as the core stores it.
	if got := textareas(set); len(got) != 1 || strings.ReplaceAll(got[0], "\r\n", "\n") != strings.ReplaceAll(reason, "\r\n", "\n") {
		t.Errorf("the reason given back is %.80q", got)
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>bold") {
		t.Errorf("the page holds the typed reason as markup")
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("a refused rejection changed the set: %+v", got.Status)
	}
}

// A set that closed or went before the person's post was recorded shows the message and what they
// sent, their own words in read-only fields to copy, and no form to send again; the page's other
// sets stay answerable.
func TestClosedSetWithoutScriptShowsWhatWasSent(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	open := f.ask(t)

	answered := f.ask(t)
	if _, err := f.st.Answer(answered.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Lint"}}}, ""); err != nil {
		t.Fatal(err)
	}
	code, page := postPlain(t, c, f.base+"sets/"+answered.ID+"/answer", url.Values{"csrf": {f.csrf}, "q0": {"TypeScript"}, "q1": {"Docs"}, "q1_other": {hostileWords}})
	if code != http.StatusConflict {
		t.Fatalf("status %d, want 409:\n%s", code, page)
	}
	set := section(t, page, answered.ID)
	if !strings.Contains(set, "already answered; the first answer counts, so yours was not recorded.") ||
		!strings.Contains(set, `<span class="status status-completed">completed</span>`) {
		t.Errorf("the closed set does not say what happened:\n%s", set)
	}
	if strings.Contains(set, "<form") || strings.Contains(set, "csrf") {
		t.Errorf("the closed set can be sent again:\n%s", set)
	}
	if got := textareas(set); len(got) != 1 || got[0] != hostileWords || !strings.Contains(set, "<textarea readonly") {
		t.Errorf("the free text to copy is %q:\n%s", got, set)
	}
	for _, want := range []string{"Question 1 (Language): Which language should we use?", `<span class="label">TypeScript</span>`, `<span class="label">Docs</span>`} {
		if !strings.Contains(set, want) {
			t.Errorf("the closed set does not show %q:\n%s", want, set)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>bold") {
		t.Errorf("the page holds the typed text as markup")
	}
	if s := section(t, page, open.ID); !strings.Contains(s, `action="/sets/`+open.ID+`/answer"`) {
		t.Errorf("the open set is not answerable:\n%s", s)
	}
	if strings.Contains(page, `id="empty" class="empty">`) {
		t.Errorf("the page says nothing waits while a set does")
	}

	// A rejection of a set that has gone: the reason is kept, and with no set left open the page
	// says nothing waits.
	if _, err := f.st.Answer(open.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Lint"}}}, ""); err != nil {
		t.Fatal(err)
	}
	gone := f.ask(t)
	if err := os.Rename(filepath.Join(f.st.Dir(), gone.ID), filepath.Join(f.st.Dir(), ".gone-"+gone.ID)); err != nil {
		t.Fatal(err)
	}
	code, page = postPlain(t, c, f.base+"sets/"+gone.ID+"/reject", url.Values{"csrf": {f.csrf}, "reason": {"not now:\n" + hostileWords}})
	if code != http.StatusNotFound {
		t.Fatalf("status %d, want 404:\n%s", code, page)
	}
	set = section(t, page, gone.ID)
	if !strings.Contains(set, "This question set no longer exists.") || !strings.Contains(set, "status-removed") {
		t.Errorf("the removed set does not say what happened:\n%s", set)
	}
	if got := textareas(set); len(got) != 1 || got[0] != "not now:\n"+hostileWords {
		t.Errorf("the reason to copy is %q", got)
	}
	if !strings.Contains(page, `id="empty" class="empty">`) {
		t.Errorf("the page does not say nothing waits:\n%s", page)
	}
}
