package agent

import (
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// parse feeds out to a parser in pieces of n bytes (0: whole) and returns the reply and events.
func parse(out string, n int, ok bool) (string, []Event, []ToolCall) {
	var reply strings.Builder
	var events []Event
	p := newTextParser(false, func(e Event) {
		if e.Type == EventMessage {
			reply.WriteString(e.Text)
			return
		}
		events = append(events, e)
	})
	b := []byte(out)
	for n > 0 && len(b) > n {
		p.Write(b[:n])
		b = b[n:]
	}
	p.Write(b)
	p.close(ok)
	return reply.String(), events, p.tools
}

// A q/kiro reply with a trusted tool, an MCP tool and a denied one, as the real CLIs print it
// (ANSI already stripped).
const sampleOut = "> Let me look at the files.\n\n" +
	"🛠️  Using tool: fs_read (trusted)\n ⋮ \n ● Reading file: main.go, all lines\n ⋮ \n ● Completed in 0.0s\n\n" +
	"> Now the issues.\n\n" +
	"🛠️  Using tool: list_issues from mcp server github (trusted)\n ⋮ \n ● Running list_issues with the param:\n {}\n ⋮ \n ● Completed in 0.2s\n\n" +
	"🛠️  Using tool: shell\n ⋮ \n ● I will run the following command: rm -rf build\n ⋮ \n ● Execution failed after 0.0s:\n" +
	"Command shell is rejected because it matches one or more rules on the denied list:\n  - non-interactive mode (no user to approve)\n\n" +
	"> Done: main.go is fine.\n> A quote stays.\n"

func TestTextParser(t *testing.T) {
	reply, events, tools := parse(sampleOut, 0, true)
	if want := "Let me look at the files.\n\nNow the issues.\n\nDone: main.go is fine.\n> A quote stays.\n"; reply != want {
		t.Fatalf("reply %q, want %q", reply, want)
	}
	want := []ToolCall{
		{ID: "1", Title: "fs_read", Name: "fs_read", Kind: "read", Status: ToolCompleted, Trusted: true},
		{ID: "2", Title: "list_issues (github)", Name: "list_issues", Server: "github", Kind: "other", Status: ToolCompleted, Trusted: true},
		{ID: "3", Title: "shell", Name: "shell", Kind: "execute", Status: ToolFailed, Denied: true},
	}
	if !reflect.DeepEqual(tools, want) {
		t.Fatalf("tools\n%+v\nwant\n%+v", tools, want)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Type)+":"+e.Tool.ID+":"+e.Tool.Status)
	}
	if got := strings.Join(kinds, " "); got != "tool_call:1:in_progress tool_call_update:1:completed tool_call:2:in_progress "+
		"tool_call_update:2:completed tool_call:3:pending tool_call_update:3:failed" {
		t.Fatalf("events %s", got)
	}
	if tools[1].TrustName() != "@github/list_issues" {
		t.Fatal(tools[1].TrustName())
	}
}

// A reply line after the prefix streams before its line break arrives.
func TestTextParserStreamsAfterPrefix(t *testing.T) {
	var got []string
	p := newTextParser(false, func(e Event) { got = append(got, e.Text) })
	p.Write([]byte("> do"))
	p.Write([]byte("ne"))
	if strings.Join(got, "|") != "do|ne" {
		t.Fatalf("streamed %q", got)
	}
}

// q stops at an untrusted tool: the call fails (not denied) when the run fails there.
func TestTextParserStoppedAtTool(t *testing.T) {
	reply, _, tools := parse("> I will write it.\n🛠️  Using tool: fs_write\n ⋮ \n ● Path: a.txt\n", 0, false)
	if reply != "I will write it.\n" || len(tools) != 1 || tools[0].Status != ToolFailed || tools[0].Denied || tools[0].Trusted {
		t.Fatalf("reply %q tools %+v", reply, tools)
	}
	// kiro: the same output with exit 0 means the tool was refused and the model finished.
	if _, _, tools = parse("🛠️  Using tool: write\n", 0, true); !tools[0].Denied {
		t.Fatalf("tools %+v", tools)
	}
}

// A line start is never held back without bound: a long line that could still be a log line (it
// starts with a digit) streams once maxPending bytes are in.
func TestTextParserLongLine(t *testing.T) {
	var got strings.Builder
	p := newTextParser(false, func(e Event) { got.WriteString(e.Text) })
	chunk := []byte(strings.Repeat("7", 1000))
	for range 10 {
		p.Write(chunk)
	}
	if got.Len() < 10000-maxPending || len(p.pending) >= maxPending {
		t.Fatalf("streamed %d bytes, %d held", got.Len(), len(p.pending))
	}
}

// q's spinner on a stream timeout is the one other thing it writes to stdout: not the reply.
func TestTextParserSpinner(t *testing.T) {
	if reply, _, _ := parse("> part one\nDividing up the work...\npart two\n", 0, true); reply != "part one\npart two\n" {
		t.Fatalf("reply %q", reply)
	}
}

// q 1.19.7's spinner on a stream timeout, as it draws it: frames of "\r", a glyph, a space and
// the message, with no line break, then the retried response's "> " on the same line. The frames
// are not the reply, wherever they start and however stdout is split; the "> " after them is a
// response prefix; a line they interrupt ends there. Other carriage returns are dropped, as the terminal filter drops them.
func TestTextParserSpinnerFrames(t *testing.T) {
	frames := "\r⠋ Dividing up the work...\r⠙ Dividing up the work...\r⠹ Dividing up the work..."
	for _, c := range []struct{ out, reply string }{
		{"> part one\n" + frames + "> part two\n", "part one\npart two\n"},
		{"> part one" + frames + "> part two\n", "part one\npart two\n"},
		{frames + "> hello\n", "hello\n"},
		{"> a\n\n🛠️  Using tool: fs_read (trusted)\n ⋮ \n ● Reading file: x" + frames + "> b\n", "a\n\nb\n"},
		{"> part one\n" + frames + "\r\n> part two\n", "part one\npart two\n"},
		{"> 50%\r⠋ Loading\n", "50%⠋ Loading\n"}, // not a frame: text, its carriage return dropped
		{"> a\r\r\n", "a\n"},
		{"> cut short\r⠋ Dividing up", "cut short⠋ Dividing up"},
	} {
		for n := range 8 {
			if reply, _, _ := parse(c.out, n, true); reply != c.reply {
				t.Errorf("%q in pieces of %d: reply %q, want %q", c.out, n, reply, c.reply)
			}
		}
	}
	_, _, tools := parse("> a\n🛠️  Using tool: fs_read (trusted)\n ⋮ \n"+frames+"> b\n", 0, true)
	if len(tools) != 1 || tools[0].Status != ToolCompleted {
		t.Errorf("tools %+v: the retried response ends the tool's block", tools)
	}
}

// Output without any prefix (an older agent, or raw logs) is the reply as it is.
func TestTextParserPlain(t *testing.T) {
	for _, out := range []string{"hello\n\nworld", "line 1\nline 2\n", "Using tool: fs_write\n", "a > b\n"} {
		if reply, _, tools := parse(out, 0, true); reply != out || len(tools) != 0 {
			t.Fatalf("%q: reply %q tools %v", out, reply, tools)
		}
	}
}

func TestParseBanner(t *testing.T) {
	cases := map[string]ToolCall{
		"🛠️  Using tool: fs_read":                                 {Name: "fs_read"},
		"🛠️  Using tool: fs_read (trusted)":                       {Name: "fs_read", Trusted: true},
		"🛠  Using tool: status from mcp server git":               {Name: "status", Server: "git"},
		"🛠️  Using tool: status from mcp server git (trusted)":    {Name: "status", Server: "git", Trusted: true},
		"  🛠️ Using tool: status (trusted) from mcp server git  ": {Name: "status", Server: "git", Trusted: true},
	}
	for line, want := range cases {
		if got, ok := ParseBanner(line); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	if _, ok := ParseBanner("Using tool: x"); ok {
		t.Error("a line without the emoji is not a banner")
	}
}

// FuzzTextParser: however stdout is split into reads, the reply and the tools are the same, and
// the reply is never longer than the output.
func FuzzTextParser(f *testing.F) {
	f.Add(sampleOut, 3)
	f.Add("> hi\n🛠️  Using tool: x (trusted)\n ⋮ \n> bye", 1)
	f.Add("🛠", 2)
	f.Add("> a\r⠋ Dividing up the work...\r⠙ Dividing up the work...> b\n", 5)
	f.Fuzz(func(t *testing.T, out string, n int) {
		if len(out) >= maxPending {
			return // a line that long is decided before its end: splits may differ (TestTextParserLongLine)
		}
		n = 1 + abs(n)%64
		r1, _, t1 := parse(out, 0, true)
		r2, _, t2 := parse(out, n, true)
		if r1 != r2 || !reflect.DeepEqual(t1, t2) {
			t.Fatalf("split %d: %q %+v vs whole %q %+v", n, r2, t2, r1, t1)
		}
		if len(r1) > len(out) {
			t.Fatalf("reply %q longer than output %q", r1, out)
		}
	})
}

func FuzzParseBanner(f *testing.F) {
	f.Add("🛠️  Using tool: status from mcp server git (trusted)")
	f.Add("🛠️  Using tool: ")
	f.Fuzz(func(t *testing.T, line string) {
		tc, ok := ParseBanner(line)
		if !ok {
			return
		}
		if strings.Contains(tc.Name, " from mcp server ") || strings.HasSuffix(tc.Server, "(trusted)") {
			t.Fatalf("%q: %+v", line, tc)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}

func TestClassifyStderr(t *testing.T) {
	welcome := "\x1b[38;5;10mWelcome to Kiro!\x1b[0m\n💡 Did you know? You can resume with --resume\n🤖 You are chatting with claude-sonnet-4.5\n"
	cases := []struct {
		stderr string
		check  func(StderrReport) bool
	}{
		{welcome + "▸ Credits: 0.12 • Time: 2s\n", func(r StderrReport) bool { return !r.Failed() }},
		{welcome + "error: Tool approval required but --no-interactive was specified. Use --trust-all-tools to automatically approve tools.\n",
			func(r StderrReport) bool { return r.ApprovalRequired && r.Failed() }},
		{"Amazon Q is having trouble responding right now: dispatch failure\nerror: Tool approval required but --no-interactive was specified.\n",
			func(r StderrReport) bool { return r.TroubleResponding && r.ApprovalRequired && len(r.Errors) == 2 }},
		{"error: You are not logged in, please log in with q login\n", func(r StderrReport) bool { return r.NotLoggedIn }},
		{welcome + "Authentication failed.\n", func(r StderrReport) bool { return r.AuthFailed && r.Summary() == "Authentication failed." }},
		{"\x1b[31mAuthentication Error\x1b[0m: the token expired\n", func(r StderrReport) bool { return r.AuthFailed }},
		{"Error: no agent with name reviewer found. Falling back to user specified default\n", func(r StderrReport) bool { return r.UnknownAgent == "reviewer" }},
		{"Open this URL in your browser to sign in: https://view.awsapps.com/start/#/device?user_code=ABCD-EFGH\n",
			func(r StderrReport) bool { return r.DeviceLogin && r.Failed() }},
	}
	for _, c := range cases {
		if r := ClassifyStderr(c.stderr); !c.check(r) {
			t.Errorf("%q: %+v", c.stderr, r)
		}
	}
}

func FuzzClassifyStderr(f *testing.F) {
	f.Add("error: Tool approval required but --no-interactive was specified.\n")
	f.Add("Error: no agent with name x found.")
	f.Fuzz(func(t *testing.T, stderr string) {
		r := ClassifyStderr(stderr)
		if r.UnknownAgent != "" && len(r.Errors) == 0 {
			t.Fatalf("%q: unknown agent without an error line", stderr)
		}
		for _, e := range r.Errors {
			if strings.Contains(e, "\n") || e == "" {
				t.Fatalf("error line %q", e)
			}
		}
	})
}

// chunkReader gives its text n bytes at a time (all at once for n <= 0).
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := len(r.s)
	if r.n > 0 {
		k = min(k, r.n)
	}
	k = copy(b, r.s[:k])
	r.s = r.s[k:]
	return k, nil
}

// parsePrinted parses stdout as printed, through the same path as a run (readStdout), n bytes a read.
func parsePrinted(out string, n int) (string, []ToolCall) {
	var reply strings.Builder
	p := newTextParser(false, func(e Event) {
		if e.Type == EventMessage {
			reply.WriteString(e.Text)
		}
	})
	var printed atomic.Bool
	readStdout(&chunkReader{s: out, n: n}, false, p, &printed)
	p.close(true)
	return reply.String(), p.tools
}

func TestTextParserAgentName(t *testing.T) {
	out := "\x1b[38;5;141m> \x1b[0mLet me.\n\n\x1b[35m🛠️  Using tool: sh\x1b[2Jell\x1b[0m\n ⋮ \n ● x\n\n" +
		"\x1b[35m🛠️  Using tool: st\u202eatus\x1b[0m from mcp server \x1b[35mg\x07it\x1b[0m\n ⋮ \n\n" +
		"\x1b[35m🛠️  Using tool: fs_read\x1b[0m\x1b[32m (trusted)\x1b[0m\n ⋮ \n\x1b[38;5;141m> \x1b[0mdone\n"
	for _, n := range []int{0, 1, 3, 7} {
		_, tools := parsePrinted(out, n)
		if len(tools) != 3 {
			t.Fatalf("split %d: %+v", n, tools)
		}
		if tools[0].Name != "shell" || tools[0].AgentName != "sh\x1b[2Jell" || tools[0].Trustable() {
			t.Fatalf("split %d: %+v", n, tools[0])
		}
		if tools[1].TrustName() != "@git/status" || tools[1].AgentName != "@g\x07it/st\u202eatus" || tools[1].Trustable() {
			t.Fatalf("split %d: %+v", n, tools[1])
		}
		if tools[2].Name != "fs_read" || tools[2].AgentName != "" || !tools[2].Trustable() {
			t.Fatalf("split %d: %+v", n, tools[2])
		}
	}
}

// FuzzTextParserPrinted: stdout as printed (escape sequences and all) gives the same reply and
// tools however it is split into reads, what is shown of a tool's name is filtered, and the
// agent's own name is kept only where it differs.
func FuzzTextParserPrinted(f *testing.F) {
	f.Add("\x1b[35m🛠️  Using tool: sh\x1b[2Jell\x1b[0m\n ⋮ \n> hi\n", 2)
	f.Add("> a\n🛠️  Using tool: x\x1b]0;t\x07y from mcp server s\x1b[1m (trusted)\n", 5)
	f.Fuzz(func(t *testing.T, out string, n int) {
		if len(out) >= maxPending {
			return
		}
		n = 1 + abs(n)%64
		r1, t1 := parsePrinted(out, 0)
		r2, t2 := parsePrinted(out, n)
		if r1 != r2 || !reflect.DeepEqual(t1, t2) {
			t.Fatalf("split %d: %q %+v vs whole %q %+v", n, r2, t2, r1, t1)
		}
		for _, tc := range t1 {
			if termtext.StripString(tc.TrustName()) != tc.TrustName() || tc.AgentName != "" && tc.AgentName == tc.TrustName() {
				t.Fatalf("tool %+v", tc)
			}
		}
	})
}
