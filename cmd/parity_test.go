//go:build !qkit_lite

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/kballard/go-shellquote"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/streamjson"
)

// The parity table: each scenario runs on each backend and through each front
// end (`qkit ask --json`, the q-developer-agent MCP tool through the MCP SDK's client, `acp
// serve`'s text path through the ACP SDK's client as an editor). What a front says of a run is
// normalised (parityOutcome); within a front it must be the same on every backend that can
// express the scenario, and the class of the ending must be the same on every front. A cell a
// front or backend cannot express is n/a with its reason (parityNA), never left out.

// capUTF8Reply has a two-byte character at bytes 71-72 and no line break: cut to 200 bytes, the
// runner keeps its first 200.
var capUTF8Reply = strings.Repeat("x", 71) + "é" + strings.Repeat("y", 200)

// parityBackend is a column of the table: the backend and the agent behind it.
type parityBackend string

const (
	pbChat parityBackend = "chat"   // kiro-cli chat --no-interactive: the fake as kiro's chat
	pbACP  parityBackend = "acp"    // kiro-cli acp: the fake's acp mode
	pbTS   parityBackend = "acp-ts" // an ACP agent on the official TypeScript SDK (interop/stand-in-agent.js)
)

// parityFront is a row group of the table: one way a person or a program drives the run.
type parityFront string

const (
	pfAsk parityFront = "ask"       // qkit ask --json (stream-json where the test must see the run start)
	pfMCP parityFront = "mcp"       // the q-developer-agent tool of mcp serve
	pfACP parityFront = "acp-serve" // acp serve's text path, the editor on the ACP SDK's client side
)

// Classes of how a run ended, the same words on every front.
const (
	classOK        = "ok"
	classTimeout   = "timeout"
	classCap       = "cap"
	classRefused   = "refused"   // the run's policy refused a named tool (--deny-tools)
	classDenied    = "denied"    // a tool nobody trusted, and whoever decides said no
	classDied      = "died"      // the agent process ended mid-run
	classCancelled = "cancelled" // the caller stopped the run
	classPlan      = "plan"      // a dry run: the plan, nothing ran
)

// parityOutcome is what a front says of a run, normalised.
type parityOutcome struct {
	Class string
	// Reply is the agent's words as the front gives them, with qkit's notices and wrappers taken
	// off: the same on every front for one agent.
	Reply string
	// Facts are what the front says of the ending beside the reply (ask: exit codes, stop reason,
	// the hint of a failure; the tool: isError and the hint; the editor: the stop reason): the
	// same on every backend within a front.
	Facts string
	// Tools are the calls as "name trusted|untrusted status" (nil: the front does not say).
	Tools []string
	// ACPOnly are the fields only the ACP backend knows that the run gave (ask --json: session_id,
	// usage); on chat they must be absent.
	ACPOnly []string
	// ChatOnly are the fields only the chat backend knows that the run gave (ask --json: stderr,
	// original_size when the reply was cut); on ACP they must be empty.
	ChatOnly []string
	Plan     string // a dry run's command line, with the agent's path as <agent>
	// session is qkit's session id of the run, when the front says it (acp serve).
	session string
}

// parityNA marks a cell that cannot be expressed, with why.
type parityNA string

// parityScenario is a row of the table.
type parityScenario struct {
	name string
	// knobs are the agent's behaviour on each backend (nil: the backend cannot express it).
	knobs map[parityBackend][]string
	// set are settings for every front (key=value).
	set []string
	// na says why a front or a backend cannot run the scenario.
	na map[string]parityNA // by front, or by front+"/"+backend
	// waits: the agents sit idle into a timeout, so the row's cells need no turn (TestParityTable).
	waits bool
	// ask, mcp and acp drive the scenario through each front.
	askFlags  func(o *askOptions)
	mcpArgs   map[string]any
	editor    string // acp serve: the editor's answer to a permission request (allow_once, reject_once)
	cancel    bool   // the caller stops the run once the agent said something
	want      string // the class on every cell
	wantReply map[parityBackend]string
	wantTools map[parityBackend][]string
	// editorTools are the calls the editor saw (title and last status) on each backend: on the
	// text path qkit titles a call with the tool's name; on the proxy the agent's own tool_call
	// reaches the editor as the agent sent it, with the agent's title.
	editorTools map[parityBackend][]string
	// replyDiffers and factsDiffer say why the two fakes' replies or endings differ within a front
	// (what the real agents do differently), instead of comparing them; editorFactsDiffer says it
	// for acp serve alone.
	replyDiffers, factsDiffer, editorFactsDiffer string
}

func paritySet(set ...string) []string { return set }

// parityScenarios is the table's rows.
func parityScenarios() []parityScenario {
	shell := map[parityBackend][]string{
		pbChat: {"FAKEQ_TOOLS=shell", `FAKEQ_OUTPUT=done\n`},
		pbACP:  {"FAKEQ_ACP_TOOLS=shell:echo hi", `FAKEQ_OUTPUT=done\n`},
		pbTS:   {"TS_AGENT_TOOLS=echo hi", "TS_AGENT_CHUNKS=1"},
	}
	toolPreface := "kiro-cli chat says a line before it uses a tool (\"Let me use the tools for that.\"), the fake's acp mode does not"
	noRefusalPolicy := parityNA("the tool has no parameter that refuses a named tool: trust-tools and yolo-mode only trust (the denial row is its refusal)")
	return []parityScenario{
		{
			name: "plain reply",
			knobs: map[parityBackend][]string{
				pbChat: {`FAKEQ_OUTPUT=The answer.\n`}, pbACP: {`FAKEQ_OUTPUT=The answer.\n`}, pbTS: {"TS_AGENT_CHUNKS=1"},
			},
			want:      classOK,
			wantReply: map[parityBackend]string{pbChat: "The answer.\n", pbACP: "The answer.\n", pbTS: "chunk 1 of hello\n"},
			wantTools: map[parityBackend][]string{},
		},
		{
			name: "timeout",
			knobs: map[parityBackend][]string{
				pbChat: {`FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_SLEEP=60s"},
				pbACP:  {`FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_ACP_BAD=hang"},
				pbTS:   {"TS_AGENT_CHUNKS=2", "TS_AGENT_SLEEP=60000"},
			},
			set:       paritySet("agent.timeout=2s"),
			waits:     true,
			want:      classTimeout,
			wantReply: map[parityBackend]string{pbChat: "partial answer\n", pbACP: "partial answer\n", pbTS: ""},
		},
		{
			name: "cap",
			knobs: map[parityBackend][]string{
				pbChat: {"FAKEQ_LINES=200"}, pbACP: {"FAKEQ_LINES=200"}, pbTS: {"TS_AGENT_CHUNKS=200"},
			},
			set:  paritySet("agent.max_response_size=100"),
			want: classCap,
			wantReply: map[parityBackend]string{
				// Cut at the last line break within 100 bytes of the limit (output.CutPoint).
				pbChat: "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13",
				pbACP:  "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13",
				pbTS:   "chunk 1 of hello\nchunk 2 of hello\nchunk 3 of hello\nchunk 4 of hello\nchunk 5 of hello",
			},
		},
		{
			// A character across the point where a front stops showing the reply as it comes (the
			// limit less output.CutHoldBack, 72 here): no front shows half of it (acp serve's text
			// path sent its two halves in two chunks, each a replacement character to the editor).
			name: "cap-utf8",
			knobs: map[parityBackend][]string{
				pbChat: {"FAKEQ_OUTPUT=" + capUTF8Reply}, pbACP: {"FAKEQ_OUTPUT=" + capUTF8Reply},
			},
			set:  paritySet("agent.max_response_size=200"),
			want: classCap,
			wantReply: map[parityBackend]string{
				pbChat: capUTF8Reply[:200], pbACP: capUTF8Reply[:200],
			},
		},
		{
			name:     "refusal",
			knobs:    shell,
			na:       map[string]parityNA{string(pfMCP): noRefusalPolicy, string(pfACP): "the editor decides each call itself; a policy that refuses a named tool is ask's (--deny-tools)"},
			askFlags: func(o *askOptions) { o.trustTools = []string{"read"}; o.events.denyTools = []string{"shell"} },
			want:     classRefused,
			wantTools: map[parityBackend][]string{
				pbChat: {"shell untrusted failed denied"}, pbACP: {"shell untrusted failed denied"}, pbTS: {"shell untrusted failed denied"},
			},
			replyDiffers: toolPreface,
			factsDiffer: "kiro-cli chat carries on after a refused tool (exit 0, the refusal reported in denied); kiro-cli acp " +
				"ends its turn (stop reason refusal: exit 1, the task not done); the TypeScript agent carries on too",
		},
		{
			name:     "denial",
			knobs:    shell,
			mcpArgs:  map[string]any{},
			editor:   "reject_once",
			askFlags: func(o *askOptions) {},
			want:     classDenied,
			wantTools: map[parityBackend][]string{
				pbChat: {"shell untrusted failed denied"}, pbACP: {"shell untrusted failed denied"}, pbTS: {"shell untrusted failed denied"},
			},
			editorTools: map[parityBackend][]string{
				pbChat: {"shell failed"}, pbACP: {"Running: echo hi failed"}, pbTS: {"Running: echo hi failed"},
			},
			replyDiffers: "kiro-cli chat refuses the tool itself and finishes its reply without it; on ACP the agent asks, qkit says no and ends the turn",
			editorFactsDiffer: "the editor itself said no: on the proxy the agent's own ending reaches it (kiro-cli acp ends its " +
				"turn with stop reason refusal, the TypeScript agent carries on to end_turn); on the text path qkit ends the " +
				"turn (end_turn) and says why in the reply",
		},
		{
			name:      "tool use",
			knobs:     shell,
			mcpArgs:   map[string]any{"yolo-mode": true},
			editor:    "allow_once",
			askFlags:  func(o *askOptions) { o.trustAll = true },
			want:      classOK,
			wantReply: map[parityBackend]string{pbChat: "Let me use the tools for that.\n\ndone\n", pbACP: "done\n", pbTS: "chunk 1 of hello\n"},
			wantTools: map[parityBackend][]string{
				pbChat: {"shell trusted completed"}, pbACP: {"shell trusted completed"}, pbTS: {"shell trusted completed"},
			},
			editorTools: map[parityBackend][]string{
				pbChat: {"shell completed"}, pbACP: {"Running: echo hi completed"}, pbTS: {"Running: echo hi completed"},
			},
			replyDiffers: toolPreface,
		},
		{
			name: "agent death",
			knobs: map[parityBackend][]string{
				pbChat: {`FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_EXIT=1", "FAKEQ_STDERR=crashed"},
				pbACP:  {`FAKEQ_OUTPUT=partial answer\n`, "FAKEQ_ACP_BAD=die"},
			},
			na:        map[string]parityNA{string(pbTS): "the TypeScript stand-in has no knob that ends its process mid-turn"},
			want:      classDied,
			wantReply: map[parityBackend]string{pbChat: "partial answer\n", pbACP: "partial answer\n"},
			// (The messages differ: each names what the agent said on stderr.)
		},
		{
			name: "cancel",
			// The caller stops the run at the first line; the next comes 2 s later, so that the
			// replies (the first line alone) compare even when the stop takes a while to land on a
			// loaded machine. The stop ends the wait: the cells take no longer for it.
			knobs: map[parityBackend][]string{
				pbChat: {"FAKEQ_LINES=100", "FAKEQ_INTERVAL=2s"},
				pbACP:  {"FAKEQ_LINES=100", "FAKEQ_INTERVAL=2s"},
				pbTS:   {"TS_AGENT_CHUNKS=100", "TS_AGENT_SLEEP=100"},
			},
			cancel: true,
			want:   classCancelled,
		},
		{
			name:  "dry run",
			knobs: map[parityBackend][]string{pbChat: nil, pbACP: nil, pbTS: nil},
			na: map[string]parityNA{
				string(pfMCP): "the tool has no dry run: a call runs the agent",
				string(pfACP): "an editor's prompt always runs; ACP has no dry run",
			},
			askFlags: func(o *askOptions) { o.dryRun = true },
			want:     classPlan,
		},
	}
}

// TestParityTable runs the table. Each cell is a subtest scenario/front/backend; the n/a cells are
// subtests that say why and skip, so `go test -v` prints the whole table.
//
// The cells run side by side (t.Run from goroutines, which -parallel does not bound): each has its
// own QKIT_HOME and agent knobs (parityApp), none sets the environment. The rows whose agents
// sit idle into a timeout (waits) start at once, each cell on its own; the other cells keep the
// processor busy starting agents, so they take turns, as many at once as -parallel allows, while
// the waits go on.
func TestParityTable(t *testing.T) {
	parityEnv(t)
	turns := make(chan struct{}, parityTurns())
	var rows sync.WaitGroup
	for _, sc := range parityScenarios() {
		rows.Go(func() { t.Run(sc.name, func(t *testing.T) { parityRow(t, sc, turns) }) })
	}
	rows.Wait()
}

// parityRow runs a row's cells side by side, then compares them within each front.
func parityRow(t *testing.T, sc parityScenario, turns chan struct{}) {
	var mu sync.Mutex
	got := map[parityFront]map[parityBackend]parityOutcome{pfAsk: {}, pfMCP: {}, pfACP: {}}
	var cells sync.WaitGroup
	for _, front := range []parityFront{pfAsk, pfMCP, pfACP} {
		for _, b := range []parityBackend{pbChat, pbACP, pbTS} {
			cells.Go(func() {
				t.Run(string(front)+"/"+string(b), func(t *testing.T) {
					if why := sc.notApplicable(front, b); why != "" {
						t.Skip("n/a: " + string(why))
					}
					ts := ""
					if b == pbTS {
						ts = fakeqtest.TypeScriptAgent(t)
					}
					if !sc.waits {
						turns <- struct{}{}
						defer func() { <-turns }()
					}
					o := runParityCell(t, sc, front, b, ts)
					t.Logf("%s", o)
					sc.check(t, front, b, o)
					mu.Lock()
					got[front][b] = o
					mu.Unlock()
				})
			})
		}
	}
	cells.Wait()
	for _, front := range []parityFront{pfAsk, pfMCP, pfACP} {
		// Within a front, kiro-cli's chat and its acp mode end the same way, and (unless the
		// agents themselves differ, said in the row) with the same reply and tools.
		c, a := got[front][pbChat], got[front][pbACP]
		if c.Class == "" || a.Class == "" {
			continue
		}
		if sc.factsDiffer == "" && (front != pfACP || sc.editorFactsDiffer == "") && c.Facts != a.Facts {
			t.Errorf("%s: chat and acp end differently:\nchat %s\nacp  %s", front, c.Facts, a.Facts)
		}
		if sc.replyDiffers == "" && c.Reply != a.Reply {
			t.Errorf("%s: chat and acp reply differently:\nchat %q\nacp  %q", front, c.Reply, a.Reply)
		}
		if c.Plan != "" && planBackend(c.Plan) != "chat" || a.Plan != "" && planBackend(a.Plan) != "acp" {
			t.Errorf("%s: each dry run shows its own backend: chat %q, acp %q", front, c.Plan, a.Plan)
		}
	}
}

// parityTurns is how many cells that keep the processor busy run at once: -parallel's value.
func parityTurns() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return runtime.GOMAXPROCS(0)
}

// parityEnv sets, for the whole table, the environment that no cell may change: none of the
// caller's settings, fake agent knobs or login variables left over, and GOMEMLIMIT set (acp serve
// sets a memory limit, for the whole process, only when it is not).
func parityEnv(t *testing.T) {
	fakeqtest.Knobs(t, "")
	for _, v := range []string{"QKIT_HOME", "AGENT_TIMEOUT", "AGENT_MAX_RESPONSE_SIZE", "ENABLE_ADDITIONAL_TOOLS", "QKIT_CONFIG", "QKIT_INTERNAL_TRUSTED"} {
		t.Setenv(v, "")
	}
	t.Setenv("GOMEMLIMIT", "off")
}

func (sc parityScenario) notApplicable(front parityFront, b parityBackend) parityNA {
	if why := sc.na[string(front)]; why != "" {
		return why
	}
	if why := sc.na[string(b)]; why != "" {
		return why
	}
	if why := sc.na[string(front)+"/"+string(b)]; why != "" {
		return why
	}
	if _, ok := sc.knobs[b]; !ok {
		return "the agent cannot be made to do it"
	}
	if front == pfMCP && b == pbTS {
		// The tool runs on the ACP backend only when agent.backend is acp, with agent.command: the
		// TS agent is such an agent like any other.
		return ""
	}
	return ""
}

func (sc parityScenario) check(t *testing.T, front parityFront, b parityBackend, o parityOutcome) {
	t.Helper()
	if o.Class != sc.want {
		t.Errorf("class %q, want %q", o.Class, sc.want)
	}
	if want, ok := sc.wantReply[b]; ok && o.Reply != want {
		t.Errorf("reply %q, want %q", o.Reply, want)
	}
	want := sc.wantTools[b]
	if front == pfACP {
		want = sc.editorTools[b]
	}
	if o.Tools != nil && strings.Join(o.Tools, "; ") != strings.Join(want, "; ") {
		t.Errorf("tools %q, want %q", o.Tools, want)
	}
	if front == pfAsk && b == pbACP && sc.want == classOK && strings.Join(o.ACPOnly, " ") != "session_id usage" {
		// help acp-backend lists them: kiro-cli's acp gives both on every turn.
		t.Errorf("the ACP backend's own fields: %v, want session_id and usage", o.ACPOnly)
	}
	if b == pbChat && len(o.ACPOnly) > 0 {
		t.Errorf("the chat backend gave fields only the ACP backend knows: %v", o.ACPOnly)
	}
	if b != pbChat && len(o.ChatOnly) > 0 {
		t.Errorf("the ACP backend gave fields only the chat backend knows: %v", o.ChatOnly)
	}
}

func (o parityOutcome) String() string {
	return fmt.Sprintf("class=%s reply=%q tools=%q acp-only=%v chat-only=%v plan=%q facts: %s", o.Class, o.Reply, o.Tools, o.ACPOnly, o.ChatOnly, o.Plan, o.Facts)
}

// parityApp is an App on buffers for one cell: the agent of backend b with the scenario's knobs,
// every front enabled, QKIT_HOME in a temporary folder. It leaves the environment alone (the
// cells run side by side): the knobs reach the agent through its command (fakeqtest.NewAgent, env for
// the TypeScript agent), QKIT_HOME the configuration through LookupEnv.
func parityApp(t *testing.T, sc parityScenario, b parityBackend, ts string) (*app.App, *bytes.Buffer) {
	t.Helper()
	overrides := map[string]string{
		"agent.backend": "acp", "acp.enabled": "true", "tools.enabled": "q-developer-agent", "agent.timeout": "1m",
	}
	switch b {
	case pbChat:
		overrides["agent.command"] = fakeqtest.NewAgent(t, "kiro", append([]string{"FAKEQ_AS_Q=1"}, sc.knobs[b]...)...).Command
		overrides["agent.backend"] = "chat"
	case pbACP:
		overrides["agent.command"] = fakeqtest.NewAgent(t, "kiro", append([]string{"FAKEQ_AS_Q=1"}, sc.knobs[b]...)...).Command
	case pbTS:
		command := []string{"node", ts, "acp"}
		if len(sc.knobs[b]) > 0 {
			command = append(append([]string{"env"}, sc.knobs[b]...), command...)
		}
		overrides["agent.command"] = shellquote.Join(command...)
	}
	for _, kv := range sc.set {
		k, v, _ := strings.Cut(kv, "=")
		overrides[k] = v
	}
	home := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == "QKIT_HOME" {
			return home, true
		}
		return os.LookupEnv(k)
	}
	streams, _, out, errOut := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	if err := a.Load(config.LoadOptions{Overrides: overrides, LookupEnv: lookup}, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", errOut)
		}
	})
	return a, out
}

func runParityCell(t *testing.T, sc parityScenario, front parityFront, b parityBackend, ts string) parityOutcome {
	t.Helper()
	a, out := parityApp(t, sc, b, ts)
	switch front {
	case pfAsk:
		return parityAsk(t, a, out, sc, b)
	case pfMCP:
		return parityMCP(t, a, sc)
	default:
		return parityACPServe(t, a, sc)
	}
}

// firstWrite is a writer that closes started at its first write containing marker.
type firstWrite struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	marker  string
	started chan struct{}
	once    sync.Once
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte(w.marker)) {
		w.once.Do(func() { close(w.started) })
	}
	return w.buf.Write(p)
}

func (w *firstWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// parityAsk runs qkit ask --json (stream-json for a cancel: its message lines say when the agent
// started to answer, and its last line is the same result object).
func parityAsk(t *testing.T, a *app.App, out *bytes.Buffer, sc parityScenario, b parityBackend) parityOutcome {
	opts := askOpts(sc.askFlags)
	opts.asJSON = true
	ctx := t.Context()
	// --json's object (stream-json's result carries the same fields but for exit_code, which is
	// qkit's there and the agent's in --json).
	var res askEventsJSON
	var err error
	if sc.cancel {
		opts.asJSON = false
		opts.events.outputFormat = formatStreamJSON
		w := &firstWrite{marker: `"type":"message"`, started: make(chan struct{})}
		a.IO.Out = w
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		go func() {
			select {
			case <-w.started:
			case <-t.Context().Done():
			}
			cancel()
		}()
		err = runAsk(ctx, a, opts, []string{"hello"})
		lines := strings.Split(strings.TrimSpace(w.String()), "\n")
		var last streamjson.Result
		if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &last); jerr != nil || last.Type != "result" {
			t.Fatalf("the last line is not the result: %v\n%s", jerr, w.String())
		}
		res = askEventsJSON{askJSON: askJSON{Output: last.Output, Truncated: last.Truncated, TimedOut: last.TimedOut, ExitCode: last.AgentExitCode},
			Backend: last.Backend, SessionID: last.SessionID, StopReason: last.StopReason, Usage: last.Usage, Tools: last.Tools, Denied: last.Denied}
	} else {
		err = runAsk(ctx, a, opts, []string{"hello"})
		if opts.dryRun {
			var plan dryRunJSON
			if jerr := json.Unmarshal(out.Bytes(), &plan); jerr != nil || err != nil {
				t.Fatalf("--dry-run --json: %v %v %s", err, jerr, out.String())
			}
			argv := append([]string{"<agent>"}, plan.Argv[1:]...)
			if b == pbTS {
				argv = append([]string{"<agent>"}, plan.Argv[2:]...) // node <script>
			}
			return parityOutcome{Class: classPlan, Plan: strings.Join(argv, " "), Facts: "prompt " + plan.Prompt}
		}
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			t.Fatalf("--json: %v: %v\n%s", err, jerr, out.String())
		}
	}
	o := parityOutcome{Reply: res.Output, Tools: []string{}}
	for _, tool := range res.Tools {
		o.Tools = append(o.Tools, parityTool(tool.Name, tool.Trusted, tool.Denied, tool.Status))
	}
	code := output.Code(err)
	switch {
	case len(opts.events.denyTools) > 0 && len(res.Denied) > 0 && (code == output.ExitOK || code == output.ExitFailure):
		o.Class = classRefused // reported (exit 0) or the end of the turn (exit 1): see the row
	case code == output.ExitTimeout:
		o.Class = classTimeout
	case code == output.ExitInterrupted:
		o.Class = classCancelled
	case code == output.ExitOK && res.Truncated:
		o.Class = classCap
	case code == output.ExitOK:
		o.Class = classOK
	case strings.Contains(err.Error(), "to allow it"):
		o.Class = classDenied
	default:
		o.Class = classDied
	}
	if res.SessionID != "" {
		o.ACPOnly = append(o.ACPOnly, "session_id")
	}
	if res.Usage != nil {
		o.ACPOnly = append(o.ACPOnly, "usage")
	}
	if len(res.RefusedPaths)+len(res.RefusedRequests) > 0 {
		o.ACPOnly = append(o.ACPOnly, "refused_paths/refused_requests")
	}
	o.Facts = fmt.Sprintf("exit %d, agent exit_code %d, stop_reason %s, truncated %v, timed_out %v, hint %q, tools %q",
		code, res.ExitCode, res.StopReason, res.Truncated, res.TimedOut, parityHint(err), o.Tools)
	return o
}

// parityHint is the part of a failure's message that says what to change ("to allow it, ..."),
// the same on both backends; the part before names the tool as each agent announced it.
func parityHint(err error) string {
	if err == nil {
		return ""
	}
	_, hint, _ := strings.Cut(err.Error(), "to allow it")
	hint, _, _ = strings.Cut(hint, ";")
	return hint
}

func parityTool(name string, trusted, denied bool, status string) string {
	trust := "untrusted"
	if trusted {
		trust = "trusted"
	}
	if denied {
		status += " denied"
	}
	return name + " " + trust + " " + status
}

// parityMCP calls the q-developer-agent tool of mcp serve through the MCP SDK's client. The result
// is the reply's text: the tools appear only in progress messages, so Tools is nil.
func parityMCP(t *testing.T, a *app.App, sc parityScenario) parityOutcome {
	progressed := make(chan struct{})
	var once sync.Once
	fromServer, toServer, _ := serveOnPipes(t, a, func() error {
		return runMCPServe(context.Background(), a, &mcpServeOptions{eofGrace: 0})
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			once.Do(func() { close(progressed) })
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: fromServer, Writer: toServer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	args := map[string]any{"prompt": "hello"}
	for k, v := range sc.mcpArgs {
		args[k] = v
	}
	params := &mcp.CallToolParams{Name: "q-developer-agent", Arguments: args}
	params.SetProgressToken("parity")
	ctx := t.Context()
	if sc.cancel {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		go func() {
			select {
			case <-progressed:
			case <-t.Context().Done():
			}
			cancel()
		}()
	}
	res, err := cs.CallTool(ctx, params)
	if sc.cancel {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled call: %v %+v", err, res)
		}
		// The server sends no result after the client cancelled (TestCancelledCallGetsNoResponse);
		// that the run stopped shows in the next call being answered.
		next, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{}})
		if err != nil || next.IsError {
			t.Fatalf("the call after a cancel: %v %+v", err, next)
		}
		return parityOutcome{Class: classCancelled, Facts: "no result: the client cancelled"}
	}
	if err != nil {
		t.Fatal(err)
	}
	s := mcptest.Text(res) // the reply, without the block that carries the session's id
	o := parityOutcome{}
	body, failure := s, ""
	for _, sep := range []string{"\n\nOutput before the failure:\n", "\n\nOutput:\n"} {
		if before, after, ok := strings.Cut(s, sep); ok && res.IsError {
			failure, body = before, after
		}
	}
	if res.IsError && failure == "" {
		failure, body = s, ""
	}
	switch {
	case !res.IsError && strings.Contains(s, "\n\n[TIMED OUT"):
		o.Class, body = classTimeout, s[:strings.LastIndex(s, "\n\n[TIMED OUT")]
	case !res.IsError && strings.Contains(s, "\n\n[RESPONSE TRUNCATED"):
		o.Class, body = classCap, s[:strings.LastIndex(s, "\n\n[RESPONSE TRUNCATED")]
	case !res.IsError:
		o.Class = classOK
	case strings.Contains(failure, "to allow it"):
		o.Class = classDenied
	default:
		o.Class = classDied
	}
	o.Reply = body
	_, hint, _ := strings.Cut(failure, "to allow it")
	o.Facts = fmt.Sprintf("isError %v, hint %q", res.IsError, hint)
	return o
}

// parityEditor is the editor's end of acp serve: it keeps the agent's text and tool calls, answers
// permission requests with answer, and calls onText at the first chunk.
type parityEditor struct {
	acp.Client
	answer string
	onText func()
	mu     sync.Mutex
	text   strings.Builder
	titles map[acp.ToolCallId]string
	status map[acp.ToolCallId]string
	order  []acp.ToolCallId
	once   sync.Once
	// rejected: the editor said no to a permission request.
	rejected bool
}

func (e *parityEditor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		e.text.WriteString(u.AgentMessageChunk.Content.Text.Text)
		if e.onText != nil {
			e.once.Do(e.onText)
		}
	case u.ToolCall != nil:
		e.order = append(e.order, u.ToolCall.ToolCallId)
		e.titles[u.ToolCall.ToolCallId] = u.ToolCall.Title
		e.status[u.ToolCall.ToolCallId] = string(u.ToolCall.Status)
	case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
		e.status[u.ToolCallUpdate.ToolCallId] = string(*u.ToolCallUpdate.Status)
	}
	return nil
}

func (e *parityEditor) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	if e.answer == "" {
		return acp.RequestPermissionResponse{}, errors.New("the editor was not expecting a permission request")
	}
	// The editor picks among the options it was offered, by kind (each agent names its own).
	for _, o := range r.Options {
		if string(o.Kind) == e.answer {
			e.mu.Lock()
			e.rejected = e.rejected || o.Kind == acp.PermissionOptionKindRejectOnce
			e.mu.Unlock()
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId},
			}}, nil
		}
	}
	return acp.RequestPermissionResponse{}, fmt.Errorf("the editor was offered no %s option: %+v", e.answer, r.Options)
}

// parityACPServe prompts acp serve's text path once, as an editor on the ACP SDK's client side.
func parityACPServe(t *testing.T, a *app.App, sc parityScenario) parityOutcome {
	fromServer, toServer, _ := serveOnPipes(t, a, func() error {
		return runACPServe(context.Background(), a, &acpServeOptions{})
	})
	ed := &parityEditor{answer: sc.editor, titles: map[acp.ToolCallId]string{}, status: map[acp.ToolCallId]string{}}
	conn := acp.NewClientSideConnection(ed, toServer, fromServer)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = toServer.Close(); _, _ = io.Copy(io.Discard, fromServer) })
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.cancel {
		ed.onText = func() {
			go func() { _ = conn.Cancel(context.Background(), acp.CancelNotification{SessionId: s.SessionId}) }()
		}
	}
	res, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	said := ed.text.String()
	o := parityOutcome{Reply: said, Tools: []string{}, session: string(s.SessionId)}
	for _, id := range ed.order {
		o.Tools = append(o.Tools, ed.titles[id]+" "+ed.status[id])
	}
	sort.Strings(o.Tools)
	o.Facts = fmt.Sprintf("stop %s", res.StopReason)
	switch {
	case res.StopReason == acp.StopReasonCancelled:
		o.Class = classCancelled
	case strings.Contains(said, "\n\n[TIMED OUT"):
		o.Class, o.Reply = classTimeout, said[:strings.LastIndex(said, "\n\n[TIMED OUT")]
	case strings.Contains(said, "\n\n[RESPONSE TRUNCATED"):
		o.Class, o.Reply = classCap, said[:strings.LastIndex(said, "\n\n[RESPONSE TRUNCATED")]
	case strings.Contains(said, "was refused, so the turn ended without it"):
		o.Class, o.Reply = classDenied, said[:strings.LastIndex(said, "\n\nPermission to use")]
	case ed.rejected && slices.ContainsFunc(o.Tools, func(t string) bool { return strings.HasSuffix(t, " failed") }):
		// The proxy: the editor said no, the call failed, and the agent ended its turn its own way.
		o.Class = classDenied
	case res.StopReason == acp.StopReasonEndTurn:
		o.Class = classOK
	default:
		o.Class = classDied
		if i := strings.Index(said, " failed: "); i >= 0 {
			o.Reply = said[:strings.LastIndex(said[:i], "\n\n")] // the failure follows the reply
		}
	}
	return o
}

// planBackend is the second word of a dry run's plan (its backend), "" when it has none.
func planBackend(plan string) string {
	if f := strings.Fields(plan); len(f) > 1 {
		return f[1]
	}
	return ""
}
