package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
	"github.com/qkit-cli/qkit/internal/questionsweb"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// questionsServer connects a client to a server with the given settings and returns the session
// store the human side uses, and the server's log.
func questionsServer(t *testing.T, env map[string]string, opts *mcp.ClientOptions) (*mcp.ClientSession, *dirstore.Store, *syncBuffer) {
	t.Helper()
	a, st, logs := questionsApp(t, env)
	return mcptest.ConnectWith(t, &mcpserver.Deps{App: a}, opts), st, logs
}

// questionsApp is a server's app with the given settings (progress every 20 ms unless set), the
// store the human side answers through, and the server's log, printed when the test fails.
func questionsApp(t *testing.T, env map[string]string) (*app.App, *dirstore.Store, *syncBuffer) {
	t.Helper()
	vars := map[string]string{"QKIT_QUESTIONS_PROGRESS_INTERVAL": "20ms"}
	maps.Copy(vars, env)
	a := mcptest.NewApp(t, vars)
	logs := &syncBuffer{}
	a.Logger = app.NewLogger(logs, slog.LevelDebug)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	st, err := dirstore.New(filepath.Join(a.Config.Paths.State, "questions"), questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return a, st, logs
}

var langArgs = map[string]any{"questions": []any{
	map[string]any{"question": "Which language should we use?", "header": "Language", "multiSelect": false,
		"options": []any{map[string]any{"label": "Go", "description": "static binary"}, map[string]any{"label": "TypeScript"}}},
	map[string]any{"question": "Which extras?", "header": "Extras", "multiSelect": true,
		"options": []any{map[string]any{"label": "Lint"}, map[string]any{"label": "Docs"}}},
}}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func askAsync(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, params)
		out <- callResult{res, err}
	}()
	return out
}

func nextPending(t *testing.T, st questions.Store) *questions.Session {
	t.Helper()
	s, err := st.WaitPending(t.Context(), questions.WaitPendingOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestQuestionsToolListed(t *testing.T) {
	t.Parallel()
	cs, _, _ := questionsServer(t, nil, nil)
	tool := listed(t, cs)["ask_user_questions"]
	if tool == nil {
		t.Fatal("ask_user_questions is not listed")
	}
	an := tool.Annotations
	if an == nil || an.OpenWorldHint == nil || !*an.OpenWorldHint || an.ReadOnlyHint || !an.IdempotentHint {
		t.Fatalf("annotations %+v", an)
	}
	if !strings.Contains(tool.Description, "Asks the user 1 to 4 multiple-choice questions") || tool.OutputSchema == nil ||
		!strings.Contains(tool.Description, "call the tool again with\nthe same questions and that call collects the late answer") {
		t.Fatalf("tool %+v", tool)
	}
	schema, _ := json.Marshal(tool.InputSchema)
	if !strings.Contains(string(schema), `"maxItems":4`) || !strings.Contains(string(schema), `"header"`) {
		t.Fatalf("input schema %s", schema)
	}
}

func TestQuestionsToolValidation(t *testing.T) {
	t.Parallel()
	cs, _, _ := questionsServer(t, nil, nil)
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"questions": []any{}}, "At least one question is required"},
		{map[string]any{}, "At least one question is required"},
		{map[string]any{"questions": []any{map[string]any{"question": "q", "header": "h", "options": []any{map[string]any{"label": "a"}}}}},
			"questions[0].options: at least 2 options are required"},
		{map[string]any{"questions": []any{map[string]any{"prompt": "q", "title": "h", "options": []any{"a", "b"}}}},
			`questions[0].prompt: unknown field (did you mean "question"?)`},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		if text := mcptest.Text(res); !res.IsError || !strings.HasPrefix(text, tt.want) {
			t.Errorf("%v: got %v %q", tt.args, res.IsError, text)
		}
	}
}

// The client calls the tool while another goroutine answers it, as `qkit questions answer` would.
func TestQuestionsToolAnswered(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var progress []string
	cs, st, logs := questionsServer(t, nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Message)
			mu.Unlock()
		},
	})
	params := &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs}
	params.SetProgressToken("tok")
	done := askAsync(t.Context(), cs, params)
	s := nextPending(t, st)
	if s.Request.Source != "mcp" || len(s.Request.Questions) != 2 {
		t.Fatalf("session %+v", s.Request)
	}
	// Answer once a periodic progress notification has arrived (after the first, sent when the set
	// is stored).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		seen := append([]string(nil), progress...)
		mu.Unlock()
		if len(seen) > 1 && strings.Contains(seen[len(seen)-1], "Waiting for the user to answer") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no periodic progress notification while the set waited: %q", seen)
		}
	}
	if _, err := st.Answer(s.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Docs"}, Other: "and CI"}}, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	want := "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n2. [Extras] Which extras?\n→ Docs\n→ Other: \"and CI\""
	if got := mcptest.Text(r.res); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var sc questions.Result
	data, _ := json.Marshal(r.res.StructuredContent)
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.SessionID != s.ID || sc.CallID != s.Status.CallID || sc.Status != questions.Completed || sc.Answers[1].Other != "and CI" || sc.Answers[0].Selected[0] != "Go" {
		t.Fatalf("structured %s", data)
	}
	mu.Lock()
	last := ""
	if len(progress) > 0 {
		last = progress[len(progress)-1]
	}
	mu.Unlock()
	if !strings.Contains(last, "Waiting for the user to answer 2 question(s) (question set "+s.ID[:8]) {
		t.Fatalf("progress %q", last)
	}
	if !strings.Contains(logs.String(), `msg="Session completed successfully" tool=ask_user_questions sessionId=`+s.ID+" callId="+s.Status.CallID) {
		t.Fatalf("log:\n%s", logs.String())
	}

	// A second identical call is a new session with its own callId.
	done = askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s2 := nextPending(t, st)
	if s2.ID == s.ID || s2.Status.CallID == s.Status.CallID {
		t.Fatal("ids reused")
	}
	if _, err := st.Reject(s2.ID, "", ""); err != nil {
		t.Fatal(err)
	}
	<-done
}

func TestQuestionsToolRejected(t *testing.T) {
	t.Parallel()
	cs, st, _ := questionsServer(t, nil, nil)
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	if _, err := st.Reject(s.ID, "Ask me after the release", ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	if got := mcptest.Text(r.res); got != "User rejected this question set.\n\nRejection reason: \"Ask me after the release\"" {
		t.Fatalf("got %q", got)
	}
	data, _ := json.Marshal(r.res.StructuredContent)
	if !strings.Contains(string(data), `"status":"rejected"`) || !strings.Contains(string(data), `"rejectionReason":"Ask me after the release"`) {
		t.Fatalf("structured %s", data)
	}
}

func TestQuestionsToolTimeout(t *testing.T) {
	t.Parallel()
	cs, st, logs := questionsServer(t, map[string]string{"QKIT_QUESTIONS_TIMEOUT": "200ms"}, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	if err != nil {
		t.Fatal(err)
	}
	text := mcptest.Text(res)
	if !res.IsError || !strings.Contains(text, "timed out waiting for the user's answer (no answer within 200ms)") {
		t.Fatalf("%v %q", res.IsError, text)
	}
	all, _ := st.List()
	if len(all) != 1 || all[0].Status.Status != questions.TimedOut {
		t.Fatalf("sessions %+v", all)
	}
	// The seed: "Session failed" with the error details.
	want := `msg="Session failed" tool=ask_user_questions sessionId=` + all[0].ID + ` callId=` + all[0].Status.CallID +
		` error="question set ` + all[0].ID + ` timed out waiting for the user's answer (no answer within 200ms)"`
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log has no %s:\n%s", want, logs.String())
	}
}

// A cancelled call leaves its set detached: still answerable, and visible as such.
func TestQuestionsToolCancelled(t *testing.T) {
	t.Parallel()
	cs, st, _ := questionsServer(t, nil, nil)
	s := cancelledAsk(t, cs, st)
	if s.Status.Reason != "the assistant's call ended; the set stays answerable and a repeated call collects the answer" {
		t.Fatalf("reason %q", s.Status.Reason)
	}
	p, err := st.WaitPending(t.Context(), questions.WaitPendingOptions{Timeout: 10 * time.Second})
	if err != nil || p.ID != s.ID {
		t.Fatalf("a terminal is not offered the detached set: %v %v", p, err)
	}
}

// cancelledAsk asks langArgs, cancels the call once the set is stored, and returns the set once it
// is detached.
func cancelledAsk(t *testing.T, cs *mcp.ClientSession, st questions.Store) *questions.Session {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := askAsync(ctx, cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	cancel()
	<-done
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got, err := st.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Status == questions.Detached {
			return got
		}
		if !got.Status.Status.Open() {
			t.Fatalf("the cancelled call's set is %s", got.Status.Status)
		}
	}
	t.Fatal("the cancelled call's set was not marked detached")
	return nil
}

var goAndDocs = []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Docs"}}}

// Cancel, answer, ask again: the repeated call returns the late answer at once, from the same set,
// and a third identical call asks anew.
func TestQuestionsToolRepeatedCallCollectsLateAnswer(t *testing.T) {
	t.Parallel()
	cs, st, logs := questionsServer(t, nil, nil)
	s := cancelledAsk(t, cs, st)
	if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(mcptest.Text(res), "→ Go — static binary") {
		t.Fatalf("got %q", mcptest.Text(res))
	}
	data, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(data), `"sessionId":"`+s.ID+`"`) {
		t.Fatalf("structured %s", data)
	}
	logged(t, logs, `msg="repeated call takes over the detached question set" tool=ask_user_questions sessionId=`+s.ID)
	got, _ := st.Get(s.ID)
	if got.Status.Status != questions.Completed || got.Status.Detached {
		t.Fatalf("after collecting: %+v", got.Status)
	}
	// Collected once: the same questions asked again are a new set.
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s3 := nextPending(t, st)
	if s3.ID == s.ID {
		t.Fatal("an answer was collected twice")
	}
	_, _ = st.Reject(s3.ID, "", "")
	<-done
}

// Cancel, ask again, then answer: the repeated call waits on the same set and gets the answer; a
// different question set is never taken over.
func TestQuestionsToolRepeatedCallWaitsForLateAnswer(t *testing.T) {
	t.Parallel()
	cs, st, _ := questionsServer(t, nil, nil)
	s := cancelledAsk(t, cs, st)
	other := map[string]any{"questions": []any{map[string]any{"question": "Tabs or spaces?", "header": "Indent",
		"options": []any{map[string]any{"label": "Tabs"}, map[string]any{"label": "Spaces"}}}}}
	otherDone := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: other})
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	var all []*questions.Session
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got, _ := st.Get(s.ID)
		all, _ = st.List()
		if got.Status.Status == questions.Pending && len(all) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the repeated call did not take the set over (%+v), or the other question is missing (%d sets)", got.Status, len(all))
		}
	}
	if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(mcptest.Text(r.res), "→ Docs") {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	for _, o := range all {
		if o.ID != s.ID {
			_, _ = st.Reject(o.ID, "", "")
		}
	}
	<-otherDone
}

// A rejection given while no call waited is collected the same way.
func TestQuestionsToolRepeatedCallCollectsRejection(t *testing.T) {
	t.Parallel()
	cs, st, _ := questionsServer(t, nil, nil)
	s := cancelledAsk(t, cs, st)
	if _, err := st.Reject(s.ID, "not now", ""); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	if err != nil || res.IsError || mcptest.Text(res) != "User rejected this question set.\n\nRejection reason: \"not now\"" {
		t.Fatalf("%v %+v", err, res)
	}
}

// A malformed answers.json written by hand abandons the session and fails the call cleanly.
func TestQuestionsToolMalformedAnswers(t *testing.T) {
	t.Parallel()
	cs, st, _ := questionsServer(t, nil, nil)
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	if err := writeQuestionsFile(filepath.Join(st.Dir(), s.ID, dirstore.AnswersFile), `{"answers":[{"questionIn`); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.res.IsError || !strings.Contains(mcptest.Text(r.res), "was abandoned: answers.json is malformed") {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	// The server still serves.
	if _, ok := listed(t, cs)["ask_user_questions"]; !ok {
		t.Fatal("server gone")
	}
}

// Every call starts a cleanup of finished sessions older than questions.retention and logs the count.
func TestQuestionsToolCleansUp(t *testing.T) {
	t.Parallel()
	cs, st, logs := questionsServer(t, map[string]string{"QKIT_QUESTIONS_RETENTION": "1m"}, nil)
	old, err := st.Create(&questions.QuestionSet{Questions: []questions.Question{{Question: "q?", Header: "h", Options: []questions.Option{{Label: "a"}, {Label: "b"}}}}}, questions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reject(old.ID, "", ""); err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if err := writeQuestionsFile(filepath.Join(st.Dir(), old.ID, dirstore.StatusFile),
		`{"status":"rejected","createdAt":"`+stale+`","updatedAt":"`+stale+`"}`); err != nil {
		t.Fatal(err)
	}
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	_, _ = st.Reject(s.ID, "", "")
	<-done
	// The cleanup runs beside the call and may finish after it.
	logged(t, logs, `msg="removed expired question sessions" tool=ask_user_questions count=1`)
	if _, err := st.Get(old.ID); err == nil {
		t.Fatal("expired session kept")
	}
}

func writeQuestionsFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

// A cleanup that fails only logs a warning: the call itself goes on and succeeds.
func TestQuestionsToolCleanupFailureOnlyWarns(t *testing.T) {
	t.Parallel()
	cs, st, logs := questionsServer(t, nil, nil)
	// A session whose status.json is a directory can be neither read nor repaired.
	bad := filepath.Join(st.Dir(), "0badbad0-0000-4000-8000-000000000000")
	if err := os.MkdirAll(filepath.Join(bad, dirstore.StatusFile), 0o700); err != nil {
		t.Fatal(err)
	}
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	if _, err := st.Answer(s.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{}}}, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("%v %+v", r.err, r.res)
	}
	logged(t, logs, `level=WARN msg="cleanup of expired question sessions failed" tool=ask_user_questions error=`)
}

// logged waits for the server's log to contain want.
func logged(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log has no %q:\n%s", want, logs.String())
		}
	}
}

// The first progress notification goes out as soon as the set is stored, before any interval, and
// says how to answer: qkit questions wait, and the web page (without its token) while one runs.
func TestQuestionsToolFirstProgressNamesThePage(t *testing.T) {
	t.Parallel()
	first := make(chan string, 8)
	cs, st, _ := questionsServer(t, map[string]string{"QKIT_QUESTIONS_PROGRESS_INTERVAL": "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			first <- r.Params.Message
		},
	})
	state := filepath.Dir(st.Dir())
	page, err := questionsweb.New(st, questionsweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- page.Serve(ctx, ln, state) }()
	t.Cleanup(func() { stop(); <-served })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := questions.FindPage(state); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the page did not record itself")
		}
	}
	params := &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs}
	params.SetProgressToken("tok")
	done := askAsync(t.Context(), cs, params)
	var msg string
	select {
	case msg = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no first progress notification (questions.progress_interval 0: only the first)")
	}
	s := nextPending(t, st)
	want := "Question set " + s.ID[:8] + " is waiting for the user's answer to 2 question(s); they answer with qkit questions wait or on the web page at " + page.BaseURL(ln.Addr()) + "."
	if msg != want || strings.Contains(msg, page.Token()) {
		t.Fatalf("first progress %q, want %q", msg, want)
	}
	if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
		t.Fatal(err)
	}
	<-done
}
