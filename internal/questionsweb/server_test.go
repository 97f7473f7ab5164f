package questionsweb

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

type fixture struct {
	st    *dirstore.Store
	srv   *Server
	base  string // http://127.0.0.1:PORT/
	state string
	stop  context.CancelFunc
	done  chan error
	csrf  string // the form value of the session browser opened
}

// serve starts a page over a fresh file store on a loopback port.
func serve(t *testing.T) *fixture {
	t.Helper()
	state := t.TempDir()
	st, err := dirstore.New(filepath.Join(state, "questions"), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &fixture{st: st, srv: srv, base: srv.BaseURL(ln.Addr()), state: state, stop: stop, done: make(chan error, 1)}
	go func() { f.done <- srv.Serve(ctx, ln, state) }()
	t.Cleanup(func() {
		stop()
		<-f.done
	})
	return f
}

// browser is a client that opened the printed link: it holds the session cookie, and f.csrf is the
// value its forms carry.
func (f *fixture) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(f.srv.URL(mustAddr(t, f.base)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.RawQuery != "" || !strings.Contains(string(body), "Questions waiting for you") {
		t.Fatalf("opening the link: %d %s %s", res.StatusCode, res.Request.URL, body)
	}
	form, ok := f.srv.sessions.form(sessionCookie(t, f, jar).Value)
	if !ok {
		t.Fatal("the cookie names no session")
	}
	f.csrf = form
	return c
}

// pageWith stores the question set setJSON from source and returns it with the page c is shown.
func (f *fixture) pageWith(t *testing.T, c *http.Client, setJSON, source string) (*questions.Session, string) {
	t.Helper()
	set, err := questions.ParseQuestionSet([]byte(setJSON))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.st.Create(set, questions.CreateOptions{Source: source})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return sess, string(body)
}

// sessionCookie is the page's cookie in jar.
func sessionCookie(t *testing.T, f *fixture, jar http.CookieJar) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(f.base)
	for _, c := range jar.Cookies(u) {
		if c.Name == f.srv.cookie {
			return c
		}
	}
	t.Fatalf("no cookie %s in the jar", f.srv.cookie)
	return nil
}

func mustAddr(t *testing.T, base string) net.Addr {
	u, _ := url.Parse(base)
	a, err := net.ResolveTCPAddr("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const langSet = `{"questions":[
 {"question":"Which language should we use?","header":"Language","options":[{"label":"Go","description":"static binary"},{"label":"TypeScript"}]},
 {"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Lint"},{"label":"Docs"}]}]}`

func (f *fixture) ask(t *testing.T) *questions.Session {
	t.Helper()
	set, err := questions.ParseQuestionSet([]byte(langSet))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.st.Create(set, questions.CreateOptions{Source: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

type reply struct {
	code  int
	OK    bool   `json:"ok"`
	Msg   string `json:"message"`
	State string `json:"state"` // the set's status now, when the request closed it or found it closed
}

func post(t *testing.T, c *http.Client, target string, form url.Values, hdr map[string]string) reply {
	t.Helper()
	req, _ := http.NewRequest("POST", target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r reply
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatalf("reply to %s: %v", target, err)
	}
	r.code = res.StatusCode
	return r
}

func (f *fixture) answerForm(extra ...string) url.Values {
	v := url.Values{"csrf": {f.csrf}, "q0": {"Go"}, "q1": {"Lint", "Docs"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v[extra[i]] = append(v[extra[i]], extra[i+1])
	}
	return v
}

func TestTokenIsRequired(t *testing.T) {
	f := serve(t)
	for _, target := range []string{f.base, f.base + "events", f.base + "?token=wrong"} {
		res, err := http.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), f.srv.Token()) {
			t.Fatalf("%s: %d %s", target, res.StatusCode, body)
		}
		if !strings.Contains(string(body), "link that qkit questions serve printed") && !strings.Contains(string(body), "Wrong token") {
			t.Fatalf("%s: unclear refusal %s", target, body)
		}
	}
	sess := f.ask(t)
	// A post without the cookie, or with a wrong bearer, changes nothing.
	if r := post(t, http.DefaultClient, f.base+"sets/"+sess.ID+"/answer", f.answerForm(), nil); r.code != 401 {
		t.Fatalf("no cookie: %+v", r)
	}
	if r := post(t, http.DefaultClient, f.base+"sets/"+sess.ID+"/answer", f.answerForm(), map[string]string{"Authorization": "Bearer nope"}); r.code != 401 {
		t.Fatalf("wrong bearer: %+v", r)
	}
	// The assets hold no secret and need no token.
	if res, _ := http.Get(f.base + "app.js"); res.StatusCode != 200 {
		t.Fatalf("app.js: %d", res.StatusCode)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("changed: %s", got.Status.Status)
	}
}

func TestCrossSiteRequestsAreRefused(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	target := f.base + "sets/" + sess.ID + "/answer"
	for name, hdr := range map[string]map[string]string{
		"Sec-Fetch-Site": {"Sec-Fetch-Site": "cross-site"},
		"Origin":         {"Origin": "http://evil.example"},
	} {
		if r := post(t, c, target, f.answerForm(), hdr); r.code != 403 || !strings.Contains(r.Msg, "came from another site") {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	// The cookie alone is not enough: the form must carry the token.
	form := f.answerForm()
	form.Del("csrf")
	if r := post(t, c, target, form, nil); r.code != 403 || !strings.Contains(r.Msg, "does not carry this page's token") {
		t.Fatalf("no csrf field: %+v", r)
	}
	// A name that is not loopback (DNS rebinding) is refused.
	req, _ := http.NewRequest("GET", f.base, nil)
	req.Host = "evil.example:80"
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), "Refused: this page answers only on its loopback address.") {
		t.Fatalf("foreign Host: %d %s", res.StatusCode, body)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("changed: %s", got.Status.Status)
	}
}

func TestTamperedFormsRecordNothing(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	target := f.base + "sets/" + sess.ID + "/answer"
	for _, tt := range []struct {
		form url.Values
		want string
	}{
		{f.answerForm("q0", "TypeScript"), "is single-choice"},
		{f.answerForm("q0_other", "Rust"), "is single-choice"},
		{url.Values{"csrf": {f.csrf}, "q0": {"Cobol"}, "q1": {"Lint"}}, `question 1 (Language)`},
		{f.answerForm("q7", "x"), `field "q7"`},
		{f.answerForm("admin", "1"), `field "admin"`},
		{url.Values{"csrf": {f.csrf}, "q1": {"Lint"}}, "has no answer"},
		{f.answerForm("q0_other", "caf\xe9"), ".other: must be valid UTF-8"},
		{f.answerForm("q\xff", "x"), `field "q\xff"`},
	} {
		if r := post(t, c, target, tt.form, nil); r.code != 400 || !strings.Contains(r.Msg, tt.want) || !strings.Contains(r.Msg, "nothing was recorded") {
			t.Errorf("%v: %+v", tt.form, r)
		}
	}
	if r := post(t, c, f.base+"sets/not-an-id/answer", f.answerForm(), nil); r.code != 404 {
		t.Fatalf("bad id: %+v", r)
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/reject", url.Values{"csrf": {f.csrf}, "reason": {"x"}, "q0": {"Go"}}, nil); r.code != 400 ||
		r.Msg != `The form has a field "q0" that a rejection does not take; nothing was recorded.` {
		t.Fatalf("reject with answers: %+v", r)
	}
	// A reason that is not UTF-8 gets the core's message, as questions reject --reason does.
	if r := post(t, c, f.base+"sets/"+sess.ID+"/reject", url.Values{"csrf": {f.csrf}, "reason": {"bad \xff"}}, nil); r.code != 400 ||
		!strings.Contains(r.Msg, "reason: must be valid UTF-8 text") {
		t.Fatalf("reason not UTF-8: %+v", r)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending || got.Answers != nil {
		t.Fatalf("changed: %+v", got.Status)
	}
}

// The first answer wins; the second is told, and nothing is written twice.
func TestFirstAnswerWins(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	target := f.base + "sets/" + sess.ID + "/answer"
	if r := post(t, c, target, f.answerForm("q1_other", "and CI"), nil); r.code != 200 || !r.OK || r.State != "completed" {
		t.Fatalf("first: %+v", r)
	}
	first, _ := os.ReadFile(filepath.Join(f.st.Dir(), sess.ID, dirstore.AnswersFile))
	r := post(t, c, target, url.Values{"csrf": {f.csrf}, "q0": {"TypeScript"}, "q1": {"Lint"}}, nil)
	if r.code != 409 || !strings.Contains(r.Msg, "already answered; the first answer counts") || r.State != "completed" {
		t.Fatalf("second: %+v", r)
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/reject", url.Values{"csrf": {f.csrf}}, nil); r.code != 409 {
		t.Fatalf("reject after answer: %+v", r)
	}
	again, _ := os.ReadFile(filepath.Join(f.st.Dir(), sess.ID, dirstore.AnswersFile))
	if string(first) != string(again) {
		t.Fatal("answers.json was written twice")
	}
	got, _ := f.st.Get(sess.ID)
	res := questions.ResultOf(got)
	if res.Answers[0].Selected[0] != "Go" || res.Answers[1].Other != "and CI" {
		t.Fatalf("stored %+v", res)
	}
}

// A rejection with a reason, answered without the script: a plain form post gets a page back.
func TestRejectWithoutScript(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	res, err := c.PostForm(f.base+"sets/"+sess.ID+"/reject", url.Values{"csrf": {f.csrf}, "reason": {"not now"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "Rejected. The assistant has been told.") {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Rejected || got.Status.RejectionReason != "not now" {
		t.Fatalf("%+v", got.Status)
	}
}

// The event stream shows a new set, then how it ended; when the server stops, it says so, and the
// record of the running page goes.
func TestEventsFollowTheStore(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	if r, ok := questions.FindPage(f.state); !ok || r.URL != f.base {
		t.Fatalf("running page not recorded: %+v", r)
	}
	res, err := c.Get(f.base + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan [2]string, 16)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				name = n
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				events <- [2]string{name, d}
			}
		}
		close(events)
	}()
	next := func(want string) string {
		t.Helper()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("stream ended before %q", want)
				}
				if ev[0] == want {
					return ev[1]
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no %q event", want)
			}
		}
	}
	if d := next("sync"); !strings.Contains(d, `"open":[]`) {
		t.Fatalf("first sync %s", d)
	}
	sess := f.ask(t)
	if d := next("set"); !strings.Contains(d, sess.ID) || !strings.Contains(d, `type=\"radio\" name=\"q0\" value=\"Go\"`) || !strings.Contains(d, `type=\"checkbox\" name=\"q1\"`) {
		t.Fatalf("set event %s", d)
	}
	if _, err := f.st.Answer(sess.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1}}, ""); err != nil {
		t.Fatal(err)
	}
	for {
		d := next("sync")
		// The set's badge must not keep saying pending: the sync names the status it ended in.
		if strings.Contains(d, sess.ID+`":"This question set was answered."`) && strings.Contains(d, `"ended":{"`+sess.ID+`":"completed"}`) {
			break
		}
	}
	f.stop()
	next("bye")
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	f.done <- nil // for the cleanup
	if _, ok := questions.FindPage(f.state); ok {
		t.Fatal("the running page is still recorded after it stopped")
	}
}

// An answer given on the page ends the wait of the call that asked (as the MCP tool waits).
func TestWebAnswerEndsTheWait(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	set, _ := questions.ParseQuestionSet([]byte(langSet))
	got := make(chan *questions.Result, 1)
	go func() {
		res, _, err := f.st.Ask(context.Background(), set, questions.AskOptions{Source: "mcp", Timeout: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	sess, err := f.st.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", f.answerForm(), nil); r.code != 200 {
		t.Fatalf("%+v", r)
	}
	if res := <-got; res == nil || res.Answers[1].Selected[1] != "Docs" {
		t.Fatalf("%+v", res)
	}
}

// A form over the size limit, a set that is gone, and a set that timed out: each refusal says what
// happened, and nothing is recorded.
func TestRefusalsSayWhatHappened(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	sess := f.ask(t)
	big := f.answerForm("q0_other", strings.Repeat("x", maxForm))
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", big, nil); r.code != 400 || !strings.Contains(r.Msg, "The form could not be read") {
		t.Fatalf("oversized form: %+v", r)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending || got.Answers != nil {
		t.Fatalf("oversized form changed the set: %+v", got.Status)
	}

	expired := f.ask(t)
	if _, err := f.st.Wait(context.Background(), expired.ID, questions.WaitOptions{Timeout: time.Millisecond}); err == nil {
		t.Fatal("the wait did not time out")
	}
	if r := post(t, c, f.base+"sets/"+expired.ID+"/answer", f.answerForm(), nil); r.code != 409 || !strings.Contains(r.Msg, "already closed (it timed out); the first answer counts") {
		t.Fatalf("timed-out set: %+v", r)
	}

	// Removed as a careful tool removes a set: out of sight at once (the page's feed may be reading
	// it), then deleted.
	gone := filepath.Join(f.st.Dir(), ".gone-"+sess.ID)
	if err := os.Rename(filepath.Join(f.st.Dir(), sess.ID), gone); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(gone)
	for _, action := range []string{"answer", "reject"} {
		form := f.answerForm()
		if action == "reject" {
			form = url.Values{"csrf": {f.csrf}}
		}
		if r := post(t, c, f.base+"sets/"+sess.ID+"/"+action, form, nil); r.code != 404 || r.Msg != "This question set no longer exists." {
			t.Fatalf("%s of a removed set: %+v", action, r)
		}
	}
}

// Every response, the page, its assets and the refusals alike, carries the headers that keep the page
// out of frames and other sites' scripts and stop browsers from guessing content types.
func TestEveryResponseCarriesTheSecurityHeaders(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	foreign, _ := http.NewRequest("GET", f.base, nil)
	foreign.Host = "evil.example:80"
	page, _ := http.NewRequest("GET", f.base, nil)
	script, _ := http.NewRequest("GET", f.base+"app.js", nil)
	noToken, _ := http.NewRequest("GET", f.base, nil)
	for name, tc := range map[string]struct {
		c    *http.Client
		req  *http.Request
		code int
	}{
		"page":         {c, page, 200},
		"app.js":       {c, script, 200},
		"no token":     {http.DefaultClient, noToken, 401},
		"foreign Host": {c, foreign, http.StatusMisdirectedRequest},
	} {
		res, err := tc.c.Do(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.code {
			t.Errorf("%s: status %d, want %d", name, res.StatusCode, tc.code)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", name, csp, want)
			}
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := res.Header.Get(h); got != want {
				t.Errorf("%s: %s is %q, want %q", name, h, got, want)
			}
		}
	}
}

// A set whose asking call went away, and one a terminal is answering, say so on the page.
func TestPageNotesDetachedAndClaimedSets(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	detached := f.ask(t)
	if got, err := f.st.Detach(detached.ID, "the MCP call was cancelled"); err != nil || got.Status.Status != questions.Detached {
		t.Fatalf("detach: %v %+v", err, got)
	}
	claimed := f.ask(t)
	if _, got, err := f.st.Claim(claimed.ID); err != nil || got.Status.Status != questions.InProgress {
		t.Fatalf("claim: %v %+v", err, got)
	}
	res, err := c.Get(f.base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := html.UnescapeString(string(body))
	for _, want := range []string{"the assistant's call has ended; your answer waits for it to ask again", "being answered in a terminal"} {
		if strings.Count(page, want) != 1 {
			t.Errorf("the page shows %q %d times, want once:\n%s", want, strings.Count(page, want), page)
		}
	}
}

// Browsers send a host's cookies to every port of it, so any other local web server the browser
// visits gets the page's cookie: it holds a session value of its own, never the token. That value
// opens the page only as this cookie (not as a bearer token, not as the link's token), the token in
// the cookie opens nothing, and the page the session sees does not carry the token either.
func TestCookieIsNotTheToken(t *testing.T) {
	f := serve(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(f.srv.URL(mustAddr(t, f.base)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := sessionCookie(t, f, jar)
	if cookie.Value == "" || strings.Contains(cookie.Value, f.srv.Token()) || strings.Contains(f.srv.Token(), cookie.Value) {
		t.Fatalf("the cookie %q carries the token %q", cookie.Value, f.srv.Token())
	}
	for _, h := range res.Header.Values("Set-Cookie") {
		if strings.Contains(h, f.srv.Token()) {
			t.Fatalf("Set-Cookie carries the token: %s", h)
		}
	}
	sess := f.ask(t)
	get := func(target string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", target, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	code, page := get(f.base, map[string]string{"Cookie": f.srv.cookie + "=" + cookie.Value})
	if code != 200 || !strings.Contains(page, `id="set-`+sess.ID) {
		t.Fatalf("the session cookie: %d %s", code, page)
	}
	if strings.Contains(page, f.srv.Token()) {
		t.Fatalf("the page a session sees carries the token:\n%s", page)
	}
	for name, tc := range map[string]struct {
		target string
		hdr    map[string]string
	}{
		"the token as the cookie":          {f.base, map[string]string{"Cookie": f.srv.cookie + "=" + f.srv.Token()}},
		"the token as the cookie (events)": {f.base + "events", map[string]string{"Cookie": f.srv.cookie + "=" + f.srv.Token()}},
		"the session as a bearer":          {f.base, map[string]string{"Authorization": "Bearer " + cookie.Value}},
		"the session as the link's token":  {f.base + "?token=" + cookie.Value, nil},
		"the session under another name":   {f.base, map[string]string{"Cookie": "qkit_questions_1=" + cookie.Value}},
	} {
		if code, body := get(tc.target, tc.hdr); code != http.StatusUnauthorized || strings.Contains(body, f.srv.Token()) {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	// A post with the token in the cookie and in the form changes nothing.
	tokenCookie := map[string]string{"Cookie": f.srv.cookie + "=" + f.srv.Token()}
	if r := post(t, http.DefaultClient, f.base+"sets/"+sess.ID+"/answer", url.Values{"csrf": {f.srv.Token()}, "q0": {"Go"}, "q1": {"Lint"}}, tokenCookie); r.code != 401 {
		t.Fatalf("a post with the token as the cookie: %+v", r)
	}
	// Each visit of the link is a session of its own; scripts still use the token as a bearer.
	other, _ := cookiejar.New(nil)
	if res, err := (&http.Client{Jar: other}).Get(f.srv.URL(mustAddr(t, f.base))); err != nil || res.StatusCode != 200 {
		t.Fatalf("a second visit: %v %v", res, err)
	}
	if again := sessionCookie(t, f, other); again.Value == cookie.Value {
		t.Fatal("two visits got the same session")
	}
	if code, _ := get(f.base, map[string]string{"Authorization": "Bearer " + f.srv.Token()}); code != 200 {
		t.Fatalf("the bearer token: %d", code)
	}
	if got, _ := f.st.Get(sess.ID); got.Status.Status != questions.Pending {
		t.Fatalf("changed: %s", got.Status.Status)
	}
}

// The session table is bounded: a server opened by many browsers forgets the one used least
// recently, which opens the link again to get back in.
func TestSessionsAreBounded(t *testing.T) {
	f := serve(t)
	first := f.browser(t)
	for range maxSessions - 1 {
		f.browser(t)
	}
	if res, err := first.Get(f.base); err != nil || res.StatusCode != 200 {
		t.Fatalf("the first browser, with the table full: %v %v", res, err)
	}
	f.browser(t) // one more: the least recently used goes, which is not the first any more
	if len(f.srv.sessions.all) != maxSessions {
		t.Fatalf("%d sessions, want %d", len(f.srv.sessions.all), maxSessions)
	}
	for range maxSessions {
		f.browser(t)
	}
	res, err := first.Get(f.base)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a forgotten session: %d", res.StatusCode)
	}
}

// Question text is the assistant's: the page escapes it as HTML, in the page and in the event
// stream, and an answer posted with a label that looks like markup records that exact label.
func TestHostileTextIsEscapedOnThePage(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	const hostile = `{"questions":[{"question":"</legend><script>alert(1)</script>","header":"<b>x</b>",
 "options":[{"label":"\"><img src=x onerror=alert(1)>","description":"<iframe src=//evil>"},{"label":"No"}]}]}`
	sess, page := f.pageWith(t, c, hostile, "mcp")
	for _, raw := range []string{"<script>alert", "<img", "<iframe", "<b>x"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q as markup:\n%s", raw, page)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `value="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;"`, "&lt;iframe src=//evil&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	label := sess.Set().Questions[0].Options[0].Label
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", url.Values{"csrf": {f.csrf}, "q0": {label}}, nil); r.code != 200 {
		t.Fatalf("%+v", r)
	}
	got, _ := f.st.Get(sess.ID)
	if sel := got.Answers.Answers[0].Selected; len(sel) != 1 || sel[0] != label {
		t.Fatalf("recorded %q, want %q", sel, label)
	}
}
