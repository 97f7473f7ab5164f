package stdiorpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// syncBuffer is an output the pipe writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

func acpLike(in io.Reader, out io.Writer, grace time.Duration) *Pipe {
	return New(context.Background(), in, out, Options{
		MaxLine: 1 << 20, EOFGrace: grace,
		WaitFor: func(m string) bool { return m != "session/prompt" },
	})
}

// readAll reads p to the end in a goroutine and reports when it got there.
func readAll(p *Pipe) (<-chan struct{}, *bytes.Buffer) {
	done := make(chan struct{})
	var got bytes.Buffer
	go func() {
		_, _ = io.Copy(&got, p)
		close(done)
	}()
	return done, &got
}

func TestEndOfInputWaitsForAnswers(t *testing.T) {
	p := acpLike(strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`+"\n"), io.Discard, time.Hour)
	done, _ := readAll(p)
	for n, _ := p.unanswered(); n == 0; n, _ = p.unanswered() {
		time.Sleep(time.Millisecond) // answer only a request the pipe has read
	}
	select {
	case <-done:
		t.Fatal("the end of stdin was not held while initialize was unanswered")
	case <-time.After(50 * time.Millisecond):
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}`))
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{}}`))
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}` + "\n"))
	<-done // the prompt (id 2) is not waited for
}

// TestEndOfInputWaitsForHooks: what a hook fired by an answer writes (a session's first updates)
// belongs to that answer, so the end of input waits for the hook to return too.
func TestEndOfInputWaitsForHooks(t *testing.T) {
	p := acpLike(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`+"\n"), io.Discard, time.Hour)
	release := make(chan struct{})
	p.AfterResponse(`"sessionId":"s1"`, func() { <-release })
	done, _ := readAll(p)
	for n, _ := p.unanswered(); n == 0; n, _ = p.unanswered() {
		time.Sleep(time.Millisecond) // answer only a request the pipe has read
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}` + "\n"))
	select {
	case <-done:
		t.Fatal("the end of stdin was not held while the answer's hook ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-done
}

func TestEndOfInputGivesUpAfterGrace(t *testing.T) {
	p := acpLike(strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"session/new","params":{}}`+"\n"), io.Discard, time.Millisecond)
	done, _ := readAll(p)
	<-done
}

// TestAtEOF: the end-of-input hook runs once, after the wait for answers (an answer that came in
// time is out before it) and before the SDK sees the end; a second Read does not run it again.
func TestAtEOF(t *testing.T) {
	var out syncBuffer
	var calls []string
	p := New(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`+"\n"), &out, Options{
		MaxLine: 1 << 20, EOFGrace: time.Hour,
		AtEOF: func() { calls = append(calls, "at EOF, output: "+strings.Join(out.lines(), "|")) },
	})
	line := make([]byte, 1<<10)
	if _, err := p.Read(line); err != nil {
		t.Fatal(err)
	}
	go func() {
		for n, _ := p.unanswered(); n == 0; n, _ = p.unanswered() {
			time.Sleep(time.Millisecond)
		}
		_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	}()
	if _, err := p.Read(line); err != io.EOF {
		t.Fatalf("Read at the end: %v", err)
	}
	if _, err := p.Read(line); err != io.EOF {
		t.Fatalf("Read again: %v", err)
	}
	if len(calls) != 1 || calls[0] != `at EOF, output: {"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("hook calls %q", calls)
	}
}

func TestSettled(t *testing.T) {
	p := acpLike(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"), io.Discard, time.Hour)
	buf := make([]byte, 4096)
	if _, err := p.Read(buf); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() {
		p.Settled(t.Context(), "initialize")
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Settled returned before initialize was answered")
	case <-time.After(50 * time.Millisecond):
	}
	p.Settled(t.Context(), "session/new") // nothing of that method is open
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	<-waited
}

// TestBadLinesAreAnswered: each bad line gets one error response, valid JSON with the id when
// the line had a usable one; the good lines reach the reader in order.
func TestBadLinesAreAnswered(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	cases := []struct {
		line string
		code int
		id   any
	}{
		{`{not json`, CodeParseError, nil},
		{deep, CodeParseError, nil},
		{`{"jsonrpc":"2.0","id":3,"method":"x","params":` + deep + `}`, CodeParseError, float64(3)},
		{`{"jsonrpc":"2.0","params":` + deep + `,"id":4}`, CodeParseError, float64(4)}, // read within the first 64 KiB
		{`[]`, CodeInvalidRequest, nil},
		{`42`, CodeInvalidRequest, nil},
		{`{"id":7,"method":"x"}`, CodeInvalidRequest, float64(7)},
		{`{"jsonrpc":"2.0","id":5}`, CodeInvalidRequest, float64(5)},
		{`{"jsonrpc":"2.0","id":6,"method":""}`, CodeInvalidRequest, float64(6)},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, CodeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":8,"method":3}`, CodeInvalidRequest, float64(8)},
		{`{"jsonrpc":"2.0","id":"a` + "\xff" + `b","method":3}`, CodeInvalidRequest, "a\uFFFDb"},
	}
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	good := `{"jsonrpc":"2.0","id":"` + "\xc3" + `","method":"ping"}`
	in.WriteString(good + "\n")
	var out syncBuffer
	p := New(context.Background(), strings.NewReader(in.String()), &out, Options{MaxLine: 1 << 20})
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(got) || !json.Valid(bytes.TrimSpace(got)) || !strings.Contains(string(got), `"id":"`+"\uFFFD"+`"`) {
		t.Fatalf("the good line reached the SDK as %q", got)
	}
	lines := out.lines()
	if len(lines) != len(cases) {
		t.Fatalf("%d answers for %d bad lines: %q", len(lines), len(cases), lines)
	}
	for i, c := range cases {
		var m struct {
			ID    any `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("answer %d is not JSON: %q", i, lines[i])
		}
		if m.Error.Code != c.code || m.ID != c.id || m.Error.Message == "" {
			t.Errorf("line %.60q: answer %s, want code %d id %v", c.line, lines[i], c.code, c.id)
		}
	}
}

// TestOverlongLine: a line over MaxLine is answered with a parse error carrying its id (read from
// the start of the line) and skipped to its end; a line of exactly MaxLine passes.
func TestOverlongLine(t *testing.T) {
	const limit = 200 << 10
	mk := func(id string, size int) string {
		pre := `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"text":"`
		post := `"}}`
		return pre + strings.Repeat("x", size-len(pre)-len(post)) + post
	}
	in := mk("1", limit+1) + "\n" + mk(`"two"`, limit) + "\n" + `{"jsonrpc":"2.0","params":{"a":"` + strings.Repeat("y", limit) + `"},"id":3}` + "\n"
	var out syncBuffer
	p := New(context.Background(), strings.NewReader(in), &out, Options{MaxLine: limit, LimitText: "200 KiB"})
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != limit+1 || !strings.Contains(string(got[:100]), `"two"`) {
		t.Fatalf("passed %d bytes %.100q", len(got), got)
	}
	lines := out.lines()
	want := []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"Parse error: message longer than 200 KiB"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: message longer than 200 KiB"}}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers %q, want %q", lines, want)
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int]string{16 << 20: "16 MiB", 10<<20 - 1: "10 MiB", 200 << 10: "200 KiB", 100: "100 bytes"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHead(t *testing.T) {
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{"big":[1,2,3]}}`:                    true,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}`:         true,
		`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{}}`:   false,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}`: false,
		`not json`: false,
		`[]`:       false,
	} {
		if _, got, _ := head([]byte(msg)); got != want {
			t.Errorf("head(%s) response = %v, want %v", msg, got, want)
		}
	}
}

// TestAfterResponse: the hook runs once, after the successful response that names the key, not
// after a notification or an error that does.
func TestAfterResponse(t *testing.T) {
	var out syncBuffer
	p := New(context.Background(), strings.NewReader(""), &out, Options{MaxLine: 1024})
	fired := make(chan string, 2)
	p.AfterResponse(`"sessionId":"s1"`, func() { fired <- "s1" })
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}}`))
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","data":{"sessionId":"s1"}}}`))
	select {
	case <-fired:
		t.Fatal("the hook ran before the response")
	case <-time.After(20 * time.Millisecond):
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}`))
	<-fired
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s1"}}`))
	select {
	case <-fired:
		t.Fatal("the hook ran twice")
	case <-time.After(20 * time.Millisecond):
	}
}

// TestRankLockServesTheLowestRankFirst: writers that queue behind a busy output go in rank order,
// not in the order they came (a plain mutex would give 9, 5, 1).
func TestRankLockServesTheLowestRankFirst(t *testing.T) {
	var l rankLock
	l.lock(7)
	order := make(chan uint64, 3)
	for _, rank := range []uint64{9, 5, 1} {
		go func() {
			l.lock(rank)
			order <- rank
			l.unlock()
		}()
		// Queue them one after another.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			n := len(l.waiters)
			queued := n > 0 && l.waiters[n-1].rank == rank
			l.mu.Unlock()
			if queued {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writer %d never queued", rank)
			}
		}
	}
	l.unlock()
	for _, want := range []uint64{1, 5, 9} {
		if got := <-order; got != want {
			t.Fatalf("served %d, want %d", got, want)
		}
	}
	l.lock(0) // free again
	l.unlock()
}

// FuzzPipe: whatever comes in, every answer the pipe writes is one valid JSON line, and what it
// passes on is valid UTF-8.
func FuzzPipe(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte("\x00\xff\n\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\xff","method":7}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":"` + strings.Repeat("z", 300) + `"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"m"}` + "\n" + `{"jsonrpc":"2.0","id":null,"method":"m"}` + "\n" + `{"jsonrpc":"2.0","method":"n"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"params":` + strings.Repeat("[", 10001) + `}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out syncBuffer
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // nothing answers the requests read here: the end of input must not wait
		p := New(ctx, bytes.NewReader(data), &out, Options{MaxLine: 256, EOFGrace: time.Hour,
			Request: func(m string) bool { return !strings.HasPrefix(m, "n") }})
		passed, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(passed) {
			t.Fatalf("passed invalid UTF-8 %q", passed)
		}
		for _, line := range out.lines() {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("invalid error response %q", line)
			}
		}
		for _, line := range strings.Split(string(passed), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("passed a line that is not JSON: %q", line)
			}
			var m struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Method != "" && !strings.HasPrefix(m.Method, "n") && m.ID == nil {
				t.Fatalf("passed a request without an id: %q", line)
			}
		}
	})
}

// TestCancelledRequestIsNotAnswered: with CancelMethod (MCP's notifications/cancelled), the
// answer to a request withdrawn while open is not written, and the request counts as answered
// (the end of input does not wait for it); a withdrawal of an answered or unknown request, or
// one on a pipe without CancelMethod, changes nothing.
func TestCancelledRequestIsNotAnswered(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.0,"reason":"gave up"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
	}, "\n") + "\n"
	for _, mcp := range []bool{true, false} {
		var out syncBuffer
		o := Options{MaxLine: 1 << 20, EOFGrace: time.Hour}
		if mcp {
			o.CancelMethod = "notifications/cancelled"
		}
		p := New(t.Context(), strings.NewReader(in), &out, o)
		buf := make([]byte, 1<<16)
		for range 6 { // the SDK reads every line, the withdrawals too (it cancels the handlers)
			if _, err := p.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, p); close(done) }()
		for _, id := range []string{"1", `"b"`, "3"} {
			if _, err := p.Write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[]}}` + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		<-done // every request counts as answered
		want := []string{`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`}
		if !mcp {
			want = []string{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, `{"jsonrpc":"2.0","id":"b","result":{"content":[]}}`, want[0]}
		}
		if got := out.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("CancelMethod %v: written %q, want %q", mcp, got, want)
		}
		if len(p.dropped) != 0 {
			t.Errorf("CancelMethod %v: withdrawals left over: %v", mcp, p.dropped)
		}
	}
	// A request answered before its withdrawal is read: the id is free again, and a later
	// request that reuses it is answered.
	pr, pw := io.Pipe()
	var out syncBuffer
	p := New(t.Context(), pr, &out, Options{MaxLine: 1 << 20, CancelMethod: "notifications/cancelled"})
	go func() {
		_, _ = pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	}()
	buf := make([]byte, 1<<16)
	if _, err := p.Read(buf); err != nil {
		t.Fatal(err)
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	go func() {
		_, _ = pw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	}()
	for range 2 {
		if _, err := p.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"again":true}}` + "\n"))
	pw.Close()
	if got := out.lines(); len(got) != 2 {
		t.Errorf("written %q, want both answers", got)
	}
}

// TestAwaiting: a request of a method awaits its answer from when the pipe reads it until the
// answer is written; a notification of the same method never does.
func TestAwaiting(t *testing.T) {
	p := acpLike(strings.NewReader(`{"jsonrpc":"2.0","method":"_x/note","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","id":4,"method":"_x/ask","params":{}}`+"\n"), io.Discard, time.Hour)
	buf := make([]byte, 4096)
	if _, err := p.Read(buf); err != nil {
		t.Fatal(err)
	}
	if p.Awaiting("_x/note") {
		t.Error("a notification awaits an answer")
	}
	if _, err := p.Read(buf); err != nil {
		t.Fatal(err)
	}
	if !p.Awaiting("_x/ask") || p.Awaiting("_x/note") {
		t.Error("the request read does not await its answer")
	}
	_, _ = p.Write([]byte(`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"))
	if p.Awaiting("_x/ask") {
		t.Error("an answered request still awaits")
	}
}

// TestRequestWithoutID: a request method (Options.Request) without an id never reaches the SDK,
// which would run it as a notification; the log names it. With "id":null it is answered -32600.
// Notifications, unknown methods and requests with an id pass as they came.
func TestRequestWithoutID(t *testing.T) {
	pass := []string{
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"a"}}`,
		`{"jsonrpc":"2.0","method":"foo/bar","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"foo/bar","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"a"}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
	}
	in := `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"a"}}` + "\n" +
		pass[0] + "\n" + pass[1] + "\n" +
		`{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}` + "\n" +
		`{"jsonrpc":"2.0", "id" : null ,"method":"session/new","params":{}}` + "\n" +
		pass[2] + "\n" + pass[3] + "\n" + pass[4] + "\n"
	var out syncBuffer
	var log bytes.Buffer
	requests := map[string]bool{"session/prompt": true, "session/list": true, "session/new": true}
	p := New(context.Background(), strings.NewReader(in), &out, Options{
		MaxLine: 1 << 20, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Request: func(m string) bool { return requests[m] },
	})
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(pass, "\n") + "\n"; string(got) != want {
		t.Fatalf("the SDK got\n%s\nwant\n%s", got, want)
	}
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id of \"session/list\" is null: a request needs a string or number id"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id of \"session/new\" is null: a request needs a string or number id"}}`,
	}
	if lines := out.lines(); strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers %q, want %q", lines, want)
	}
	if l := log.String(); strings.Count(l, "dropped a request sent without an id") != 1 || !strings.Contains(l, "method=session/prompt") {
		t.Fatalf("log %q: want one line naming session/prompt", l)
	}
}
