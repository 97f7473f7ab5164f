//go:build unix

package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/ptytest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// term drives a program on a pseudo-terminal the way expect does: wait for text, then type.
type term struct {
	t    *testing.T
	ptmx *os.File
	tty  *os.File // the program's side
	mu   sync.Mutex
	buf  bytes.Buffer
	seen int // bytes of buf already matched
	done chan struct{}
	wmu  sync.Mutex // one writer at a time: the answers to cursor queries, or send
}

func newTerm(t *testing.T) (*term, *os.File) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	_ = pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 160})
	tm := &term{t: t, ptmx: ptmx, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			if n > 0 {
				chunk := b[:n]
				if bytes.Contains(chunk, []byte("\x1b[6n")) { // cursor position query
					tm.wmu.Lock()
					_, _ = ptmx.Write([]byte("\x1b[1;1R"))
					tm.wmu.Unlock()
				}
				tm.mu.Lock()
				tm.buf.Write(chunk)
				tm.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = tty.Close(); _ = ptmx.Close() })
	return tm, tty
}

var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[A-Za-z]|[78])`)

// expect waits until text appears after what was matched before.
func (tm *term) expect(text string) {
	tm.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		rest := ansi.ReplaceAllString(tm.buf.String(), "")[tm.seen:]
		if i := strings.Index(rest, text); i >= 0 {
			tm.seen += i + len(text)
			tm.mu.Unlock()
			return
		}
		tm.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("terminal never showed %q; it showed:\n%s", text, ansi.ReplaceAllString(tm.buf.String(), "")[tm.seen:])
}

// send types keys once the prompt reads them: the terminal is raw and the program has read all
// that was written to it. A survey prompt draws itself before it makes the terminal raw (and the one
// before restores cooked mode as it ends), so the text a test expects can show while the terminal is
// still cooked; a key typed then is echoed, and Ctrl-C is lost. A line prompt then asks where the
// cursor is and reads the answer through a buffer it drops after the answer, so keys that arrive
// right behind an answer it has not read yet are lost; keys written while nothing is unread come
// before any later answer, which it keeps.
func (tm *term) send(keys string) {
	tm.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		tm.wmu.Lock()
		canonical, err := ptytest.Canonical(tm.tty)
		unread := 0
		if err == nil && !canonical {
			unread, err = ptytest.Pending(tm.tty)
		}
		if err == nil && !canonical && unread == 0 {
			_, err = tm.ptmx.Write([]byte(keys))
			tm.wmu.Unlock()
			if err != nil {
				tm.t.Fatal(err)
			}
			return
		}
		tm.wmu.Unlock()
		if err != nil {
			tm.t.Fatalf("before typing %q: %v", keys, err)
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("before typing %q: after 20 s the terminal is still cooked (%v) or has %d unread bytes", keys, canonical, unread)
		}
	}
}

const ttySet = `{"questions":[
 {"question":"Which language should we use?","header":"Language","options":[{"label":"Go","description":"static binary"},{"label":"TypeScript","description":"node runtime"}]},
 {"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Lint"},{"label":"Docs"}]}
]}`

// ttyApp returns an App whose streams are the terminal, with its state under a temporary QKIT_HOME,
// and the store behind it.
func ttyApp(t *testing.T, tty *os.File) (*app.App, *dirstore.Store) {
	return ttyAppIn(t, t.TempDir(), tty)
}

func ttyAppIn(t *testing.T, home string, tty *os.File) (*app.App, *dirstore.Store) {
	t.Setenv("QKIT_HOME", home)
	for _, v := range []string{"QKIT_CONFIG", "QKIT_LOG_LEVEL", "QKIT_QUESTIONS_TIMEOUT"} {
		t.Setenv(v, "")
	}
	s := &app.Streams{In: tty, Out: tty, ErrOut: tty, StdinTTY: true, StdoutTTY: true, StderrTTY: true, NoColor: true}
	st, err := dirstore.New(filepath.Join(home, "state", "questions"), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return app.New(s, app.VersionInfo{}), st
}

type askResult struct {
	res *questions.Result
	err error
}

func askInBackground(t *testing.T, st *dirstore.Store) <-chan askResult {
	return askSetInBackground(t, st, ttySet)
}

func askSetInBackground(t *testing.T, st *dirstore.Store, setJSON string) <-chan askResult {
	set, err := questions.ParseQuestionSet([]byte(setJSON))
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan askResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, _, err := st.Ask(ctx, set, questions.AskOptions{Source: "test", Timeout: time.Minute})
		out <- askResult{res, err}
	}()
	// A test that ends with the set still open must not leave the asker writing into the store while
	// the temporary folder is removed (cleanups run last-registered first, so this one comes before
	// the folder's).
	t.Cleanup(func() { cancel(); <-done })
	return out
}

func runInBackground(a *app.App, args ...string) <-chan int {
	code := make(chan int, 1)
	go func() { code <- Run(context.Background(), a, args) }()
	return code
}

const (
	keyDown  = "\x1b[B"
	keyEnter = "\r"
)

// The whole interactive walk through survey on a real terminal: single choice, multiple choice with
// "Other" free text, the review, changing an answer, and submitting.
func TestQuestionsWaitWalksThroughASetOnATerminal(t *testing.T) {
	tm, tty := newTerm(t)
	a, st := ttyApp(t, tty)
	asked := askInBackground(t, st)
	code := runInBackground(a, "questions", "wait", "--once")

	tm.expect("[1/2 Language] Which language should we use?")
	tm.expect("Reject this question set…")
	tm.send(keyDown)
	tm.expect("> TypeScript — node runtime")
	tm.send(keyEnter)
	tm.expect("[2/2 Extras] Which extras?")
	tm.expect("Other (type your own answer)")
	tm.send(" ") // Lint
	tm.expect("[x]  Lint")
	tm.send(keyDown + keyDown)
	tm.expect("> [ ]  Other")
	tm.send(" ")
	tm.expect("[x]  Other")
	tm.send(keyEnter)
	tm.expect("Your answer to Extras:")
	tm.send("nightly" + keyEnter)
	tm.expect(`2. [Extras] Lint, Other: "nightly"`)
	tm.expect("Submit these answers")
	tm.send(keyDown)
	tm.expect("> Change an answer")
	tm.send(keyEnter)
	tm.expect("Which question?")
	tm.send(keyEnter)
	tm.expect("[1/2 Language] Which language should we use?")
	tm.expect("Reject this question set…")
	tm.send(keyEnter) // Go
	tm.expect("1. [Language] Go")
	tm.expect("Reject this question set")
	tm.send(keyEnter)
	tm.expect("✓ Answers sent: question set")

	if c := <-code; c != 0 {
		t.Fatalf("wait exited %d", c)
	}
	r := <-asked
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n2. [Extras] Which extras?\n→ Lint\n→ Other: \"nightly\""
	if got := r.res.Text(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Rejecting from a question, changing one's mind once, then rejecting with a reason.
func TestQuestionsAnswerRejectsOnATerminal(t *testing.T) {
	tm, tty := newTerm(t)
	a, st := ttyApp(t, tty)
	asked := askInBackground(t, st)
	pendingSet(t, st)
	code := runInBackground(a, "questions", "answer")

	tm.expect("Reject this question set…")
	tm.send(keyDown + keyDown + keyDown)
	tm.expect("> Reject this question set…")
	tm.send(keyEnter)
	tm.expect("Reject this question set? The assistant is told you declined")
	tm.send("n" + keyEnter)
	tm.expect("[1/2 Language] Which language should we use?")
	tm.expect("Reject this question set…")
	tm.send(keyDown + keyDown + keyDown)
	tm.expect("> Reject this question set…")
	tm.send(keyEnter)
	tm.expect("The assistant is told you declined")
	tm.send("y" + keyEnter)
	tm.expect("Why?")
	tm.send("not today" + keyEnter)
	tm.expect("✓ Rejected: question set")
	if c := <-code; c != 0 {
		t.Fatalf("answer exited %d", c)
	}
	r := <-asked
	if r.err != nil || r.res.Status != questions.Rejected || r.res.RejectionReason != "not today" {
		t.Fatalf("%+v %v", r.res, r.err)
	}
}

// Ctrl-C in the middle of a set hands it back: still pending, exit 130.
func TestQuestionsWaitInterruptedOnATerminal(t *testing.T) {
	tm, tty := newTerm(t)
	a, st := ttyApp(t, tty)
	askInBackground(t, st)
	code := runInBackground(a, "questions", "wait", "--once")
	tm.expect("Reject this question set…")
	tm.send("\x03")
	if c := <-code; c != 130 {
		t.Fatalf("wait exited %d, want 130", c)
	}
	s := pendingSet(t, st)
	if s.Status.Status != questions.Pending || s.Status.Claim != nil {
		t.Fatalf("status %+v", s.Status)
	}
}

func pendingSet(t *testing.T, st *dirstore.Store) *questions.Session {
	t.Helper()
	s, err := st.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Two terminals wait at once: only one of them takes the set; the other keeps waiting.
func TestQuestionsTwoTerminalsNeverBothAnswer(t *testing.T) {
	home := t.TempDir()
	tm1, tty1 := newTerm(t)
	tm2, tty2 := newTerm(t)
	a1, st := ttyAppIn(t, home, tty1)
	a2, _ := ttyAppIn(t, home, tty2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code1 := make(chan int, 1)
	code2 := make(chan int, 1)
	go func() { code1 <- Run(ctx, a1, []string{"questions", "wait", "--once"}) }()
	go func() { code2 <- Run(ctx, a2, []string{"questions", "wait", "--once"}) }()
	tm1.expect("Waiting for questions")
	tm2.expect("Waiting for questions")
	asked := askInBackground(t, st)

	// Whichever terminal shows the first question has claimed the set.
	var mine, other *term
	for deadline := time.Now().Add(20 * time.Second); mine == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no terminal took the set")
		}
		for _, tm := range []*term{tm1, tm2} {
			tm.mu.Lock()
			if strings.Contains(ansi.ReplaceAllString(tm.buf.String(), ""), "[1/2 Language]") {
				mine = tm
			}
			tm.mu.Unlock()
		}
		time.Sleep(10 * time.Millisecond)
	}
	other = tm2
	if mine == tm2 {
		other = tm1
	}
	if s := pendingOrClaimed(t, st); s.Status.Status != questions.InProgress || s.Status.Claim == nil {
		t.Fatalf("status %+v", s.Status)
	}
	mine.expect("Reject this question set…")
	mine.send(keyEnter)
	mine.expect("Other (type your own answer)")
	mine.send(keyEnter)
	mine.expect("Submit these answers")
	mine.send(keyEnter)
	mine.expect("✓ Answers sent")
	if r := <-asked; r.err != nil || r.res.Status != questions.Completed {
		t.Fatalf("%+v %v", r.res, r.err)
	}
	other.mu.Lock()
	saw := strings.Contains(ansi.ReplaceAllString(other.buf.String(), ""), "[1/2 Language]")
	other.mu.Unlock()
	if saw {
		t.Fatal("both terminals showed the set")
	}
	cancel()
	c1, c2 := <-code1, <-code2
	if !(c1 == 0 && c2 == 130 || c1 == 130 && c2 == 0) {
		t.Fatalf("exit codes %d and %d", c1, c2)
	}
}

func pendingOrClaimed(t *testing.T, st *dirstore.Store) *questions.Session {
	t.Helper()
	all, err := st.List()
	if err != nil || len(all) != 1 {
		t.Fatalf("%d sessions, %v", len(all), err)
	}
	return all[0]
}

// With several sets pending, the walk says how many more are waiting after this one.
func TestQuestionsWaitSaysHowManyMoreAreWaiting(t *testing.T) {
	tm, tty := newTerm(t)
	a, st := ttyApp(t, tty)
	askInBackground(t, st)
	pendingSet(t, st)
	askInBackground(t, st)
	for {
		if all, _ := st.List(); len(all) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A set whose MCP call ended (detached) is offered by wait too, so it counts.
	set, err := questions.ParseQuestionSet([]byte(ttySet))
	if err != nil {
		t.Fatal(err)
	}
	detached, err := st.Create(set, questions.CreateOptions{Source: "mcp", Detachable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Detach(detached.ID, "the call ended"); err != nil {
		t.Fatal(err)
	}
	code := runInBackground(a, "questions", "wait", "--once")
	tm.expect("2 more question sets are waiting after this one.")
	tm.expect("Reject this question set…")
	tm.send("\x03")
	if c := <-code; c != 130 {
		t.Fatalf("wait exited %d, want 130", c)
	}
}

// A set whose text holds what a terminal would obey (cursor up and erase line, a window title, a
// bidi override): the form shows each as a visible escape, and the answer recorded is the stored
// label, not the text shown.
func TestQuestionsFormShowsHostileTextEscaped(t *testing.T) {
	const hostile = `{"questions":[{"question":"Proceed?\u001b]0;pwned\u0007","header":"Go\u001b[2J",
 "options":[{"label":"yes\u001b[1A\u001b[2Kno","description":"\u202eevil"},{"label":"No"}]}]}`
	tm, tty := newTerm(t)
	a, st := ttyApp(t, tty)
	asked := askSetInBackground(t, st, hostile)
	pendingSet(t, st)
	code := runInBackground(a, "questions", "answer")

	tm.expect(`[1/1 Go\x1b[2J] Proceed?\x1b]0;pwned\x07`)
	tm.expect(`> yes\x1b[1A\x1b[2Kno — \u202eevil`)
	tm.expect("Reject this question set…")
	tm.send(keyEnter)
	tm.expect(`1. [Go\x1b[2J] yes\x1b[1A\x1b[2Kno`)
	tm.expect("Reject this question set")
	tm.send(keyEnter)
	tm.expect("✓ Answers sent: question set")
	if c := <-code; c != 0 {
		t.Fatalf("answer exited %d", c)
	}
	r := <-asked
	if r.err != nil || r.res.Status != questions.Completed {
		t.Fatalf("%+v %v", r.res, r.err)
	}
	if got := r.res.Answers[0].Selected; len(got) != 1 || got[0] != "yes\x1b[1A\x1b[2Kno" {
		t.Fatalf("recorded %q, want the stored label", got)
	}
	tm.mu.Lock()
	screen := tm.buf.String()
	tm.mu.Unlock()
	for _, raw := range []string{"\x1b]0;", "\u202e", "yes\x1b[1A", "\x1b[2J"} {
		if strings.Contains(screen, raw) {
			t.Errorf("the terminal received %q as it is", raw)
		}
	}
}
