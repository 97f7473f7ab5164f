package questionsweb

import (
	"io"
	"net/url"
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
	set, err := questions.ParseQuestionSet([]byte(`{"questions":[{"question":"Pick \u202eone","header":"Pick\u202e","options":[
		{"label":"Keep\u202eevil","description":"safe\u202etxt"},{"label":"Drop"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.st.Create(set, questions.CreateOptions{Source: "mcp\u202e"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(f.base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(body)
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
