package fakeq

// `q acp`: the fake as an ACP agent on stdio, imitating `kiro-cli acp` (v2, the Rust engine),
// built on acp-go-sdk's agent side. Flags:
// --agent A, --model M, -a/--trust-all-tools, --trust-tools=a,b or --trust-tools a,b (tool names:
// shell, read, write, or an MCP tool's @server/tool or @server). session/set_model answers {} and, as kiro's
// does, changes nothing when the agent was started with --model. Environment:
//
//	FAKEQ_OUTPUT, FAKEQ_OUTPUT_QUOTED, FAKEQ_SPLIT, FAKEQ_ECHO_PROMPT, FAKEQ_LINES, FAKEQ_BYTES,
//	FAKEQ_INTERVAL, FAKEQ_FIRST_STAMP,
//	FAKEQ_BEFORE_STAMP     the reply, as for chat, each line one agent_message_chunk (FAKEQ_BYTES:
//	                       twelve 84-byte lines a chunk; FAKEQ_SPLIT: n characters a chunk)
//	FAKEQ_DELAY=d          wait d before the first chunk of the reply (the model thinking)
//	FAKEQ_ACP_THOUGHT=text an agent_thought_chunk before the reply
//	FAKEQ_ACP_PLAN=1       a plan (two entries) before the reply, then the same plan completed
//	FAKEQ_ACP_TOOLS=list   tool calls before the reply, comma-separated: shell:CMD, read:PATH,
//	                       write:PATH, mcp:SERVER/TOOL (calls TOOL, with {"text":"from fakeq"}, on
//	                       the HTTP MCP server SERVER given in session/new, if any; titled
//	                       "Running: @SERVER/TOOL", kind other, as kiro titles it). Untrusted
//	                       ones (shell, write, mcp, and a read outside the cwd) ask
//	                       session/request_permission first with
//	                       allow_once, allow_always and reject_once; a rejection fails the call
//	                       and ends the turn with stopReason refusal, as kiro does; a
//	                       session/cancel while a shell tool runs kills it and ends the turn
//	                       cancelled, as kiro does
//	FAKEQ_ACP_RAN=file     append one line per tool call that actually ran
//	FAKEQ_ACP_WRITE_TEXT=t what write:PATH writes (default "written by fakeq\n")
//	FAKEQ_ACP_SUBAGENT=1   a subagent streams under its own session (a chunk and its credits), then
//	                       reports to the turn as a "Summarizing" tool call
//	FAKEQ_ACP_V3=1         behave as kiro's V3 engine: file I/O through fs/* and shell through
//	                       terminal/* when the client advertises them
//	FAKEQ_ACP_UNASKED=list a misbehaving agent: requests sent without asking permission,
//	                       comma-separated: write:PATH (fs/write_text_file) and shell:CMD
//	                       (terminal/create, wait, output, release), whatever the client
//	                       advertised. Each comes after FAKEQ_ACP_TOOLS, as a tool call of its own
//	                       (kind edit or execute, in progress at once, never asking); one ending in
//	                       @N instead comes while tool call N of FAKEQ_ACP_TOOLS runs, after that
//	                       call's permission. FAKEQ_ACP_RAN gets "unasked SPEC: served" or
//	                       "unasked SPEC: refused: ERROR" (the client's error as the agent got it)
//	FAKEQ_ACP_UNASKED_META=id  those requests carry _meta {"toolCallId": id}
//	FAKEQ_ACP_BARE=1       the reply as kiro 1.26.2 streamed it: bare {"content":"…","type":"text"}
//	                       lines instead of agent_message_chunk updates
//	FAKEQ_ACP_STALL=1      a stream_stall_notice update (kiro 2.19.0; no ACP schema has it) before
//	                       the reply
//	FAKEQ_ACP_MODEL_ERROR=m the prompt fails with JSON-RPC -32603 and message m
//	FAKEQ_ACP_LOAD=how     loading an unknown session: error (default, -32603), hang, or exit.
//	                       kiro-cli 1.28.1 hangs; 2.16.0 answers -32603 "Failed to start session:
//	                       …" for a locked one. The default's "session <id> not found" wording
//	                       follows that shape but is a guess: no public report shows it
//	FAKEQ_ACP_BAD=how      a bad agent: text (prints a banner, not JSON), exit (exits 2 at once,
//	                       as q 1.19.7 does for an unknown subcommand), silent (never answers),
//	                       die (exits 1 mid-turn), malformed (broken JSON mid-turn), hang (the
//	                       prompt never ends, session/cancel is ignored)
//	FAKEQ_FLAVOUR=q        as FAKEQ_ACP_BAD=exit: no released q has `acp`
//	FAKEQ_LOGGED_OUT=1     no stored login (kiro v2's source): initialize lists the kiro-login auth
//	                       method and, without KIRO_API_KEY, session/new waits forever for a
//	                       device login (the sources say so of headless chat; of acp it is
//	                       inferred), until the connection ends
//	FAKEQ_ACP_LOGIN=how    with FAKEQ_LOGGED_OUT, the other readings: error (session/new fails
//	                       -32000 instead, even with KIRO_API_KEY), or silent (initialize lists no
//	                       auth method; session/new answers and the prompt waits forever)
//	FAKEQ_GRANDCHILD=file  as for chat: a grandchild that sleeps a minute, its PID in file
//	FAKEQ_ACP_TERMINATED=f append the session id of each _kiro.dev/session/terminate to f
//	FAKEQ_ACP_GENERIC=1    a third-party ACP agent instead of kiro: see acp_generic.go
//
// Sessions live in $HOME/.kiro/sessions/cli/<id>.jsonl, as kiro keeps them; session/load replays
// them (user_message_chunk, agent_message_chunk) before it answers. `_kiro.dev/session/terminate
// {sessionId}` drops a session from the process (it stays on disk, loadable), as kiro does.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// acpMain runs the fake as an ACP agent; args follow "acp".
func acpMain(args []string) int {
	bad := os.Getenv("FAKEQ_ACP_BAD")
	if Flavour() == "q" {
		bad = "exit" // q 1.19.7 has no acp subcommand
	}
	switch bad {
	case "exit":
		fmt.Fprintf(os.Stderr, "error: unrecognized subcommand 'acp'\n")
		return 2
	case "text":
		fmt.Println("Welcome to Amazon Q!")
		time.Sleep(time.Minute)
		return 0
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Minute) // deaf to the end of its input too
		return 0
	}
	if generic() {
		if err := genericArgs(args); err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
			return 2
		}
	}
	if f := os.Getenv("FAKEQ_GRANDCHILD"); f != "" {
		if err := startGrandchild(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 98
		}
	}
	recordStart() // replies.go
	a := &acpAgent{flags: parseACPFlags(args), sessions: map[string]*acpSession{}}
	out := &lockedWriter{w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	a.out = out
	// The connection reads stdin only once a.conn is set: its handlers use it.
	in, feed := io.Pipe()
	a.conn = acp.NewAgentSideConnection(a, out, in)
	a.conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		_, _ = io.Copy(feed, os.Stdin)
		deafAtEOF() // FAKEQ_DEAF: noted, and the agent lingers (deaf.go)
		feed.Close()
	}()
	<-a.conn.Done()
	a.wg.Wait()
	return 0
}

// lockedWriter flushes after every message, so the client sees each one at once; the raw writes
// of the bad modes go through the same lock.
type lockedWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err == nil && len(p) > 0 && p[len(p)-1] == '\n' {
		err = l.w.Flush()
	}
	return n, err
}

type acpFlags struct {
	agent, model string
	trustAll     bool
	trust        []string
}

func parseACPFlags(args []string) acpFlags {
	var f acpFlags
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--agent" && i+1 < len(args):
			i++
			f.agent = args[i]
		case a == "--model" && i+1 < len(args):
			i++
			f.model = args[i]
		case a == "-a" || a == "--trust-all-tools":
			f.trustAll = true
		case strings.HasPrefix(a, "--trust-tools="):
			f.trust = append(f.trust, strings.Split(strings.TrimPrefix(a, "--trust-tools="), ",")...)
		case a == "--trust-tools" && i+1 < len(args):
			i++
			f.trust = append(f.trust, strings.Split(args[i], ",")...)
		}
	}
	return f
}

type acpAgent struct {
	flags  acpFlags
	conn   *acp.AgentSideConnection
	out    *lockedWriter
	client acp.ClientCapabilities
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*acpSession
	authed   bool // FAKEQ_ACP_GENERIC: authenticate succeeded
}

type acpSession struct {
	id, cwd string
	ready   chan struct{}   // closed once the notifications that follow session/new are out
	trusted map[string]bool // tools allowed "always" in this session
	mcp     []acp.McpServer // the client's MCP servers (mcp:SERVER/TOOL calls the HTTP ones)
	model   string          // set by session/set_model; "" is the agent's
	mode    string          // FAKEQ_ACP_GENERIC: set by session/set_mode
}

var (
	_ acp.AgentLoader            = (*acpAgent)(nil)
	_ acp.ExtensionMethodHandler = (*acpAgent)(nil)
	// The SDK dispatches session/set_model to an agent with this one method.
	_ interface {
		UnstableSetSessionModel(context.Context, acp.UnstableSetSessionModelRequest) (acp.UnstableSetSessionModelResponse, error)
	} = (*acpAgent)(nil)
)

// UnstableSetSessionModel is kiro's raw-dispatched session/set_model: it answers {}, and is a
// silent no-op for an agent started with --model.
func (a *acpAgent) UnstableSetSessionModel(_ context.Context, p acp.UnstableSetSessionModelRequest) (acp.UnstableSetSessionModelResponse, error) {
	if generic() {
		return acp.UnstableSetSessionModelResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetModel)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[string(p.SessionId)]; s != nil && a.flags.model == "" {
		s.model = string(p.ModelId)
	}
	return acp.UnstableSetSessionModelResponse{}, nil
}

func (a *acpAgent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.client = p.ClientCapabilities
	if generic() {
		return a.genericInitialize(), nil
	}
	title := "Kiro CLI Agent"
	resp := acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{Image: true},
			McpCapabilities:    acp.McpCapabilities{Http: true},
		},
		AgentInfo:   &acp.Implementation{Name: "Kiro CLI Agent", Title: &title, Version: "2.0.1"},
		AuthMethods: []acp.AuthMethod{},
	}
	if loggedOut() && os.Getenv("FAKEQ_ACP_LOGIN") != "silent" {
		// kiro lists it whenever no login is stored; whether KIRO_API_KEY changes that is not
		// known, so it is listed either way.
		desc := "Run 'kiro-cli login' in terminal"
		resp.AuthMethods = []acp.AuthMethod{{Agent: &acp.AuthMethodAgent{Id: "kiro-login", Name: "Kiro Login", Description: &desc}}}
	}
	return resp, nil
}

// loggedOut: no login is stored (FAKEQ_LOGGED_OUT).
func loggedOut() bool { return os.Getenv("FAKEQ_LOGGED_OUT") != "" }

// waitsForLogin: logged out with no headless credential, kiro waits for a device login nobody
// can give.
func waitsForLogin() bool { return !generic() && loggedOut() && os.Getenv("KIRO_API_KEY") == "" }

func (a *acpAgent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if generic() {
		return a.genericNewSession(p)
	}
	switch how := os.Getenv("FAKEQ_ACP_LOGIN"); {
	case loggedOut() && how == "error":
		return acp.NewSessionResponse{}, acp.NewAuthRequired(map[string]any{"details": "not logged in: run 'kiro-cli login'"})
	case waitsForLogin() && how != "silent":
		<-ctx.Done() // the connection ended
		return acp.NewSessionResponse{}, ctx.Err()
	}
	s := &acpSession{id: uuid.NewString(), cwd: p.Cwd, trusted: map[string]bool{}, ready: make(chan struct{}), mcp: p.McpServers}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	recordSession("new", s.id) // replies.go
	if err := os.MkdirAll(sessionDir(), 0o700); err == nil {
		_ = os.WriteFile(sessionFile(s.id), nil, 0o600)
	}
	a.after(func() {
		bg := context.Background()
		_ = a.conn.NotifyExtension(bg, "_kiro.dev/commands/available", map[string]any{
			"sessionId": s.id, "commands": []map[string]any{{"name": "/model", "description": "Select a model"}},
		})
		_ = a.conn.NotifyExtension(bg, "_kiro.dev/metadata", map[string]any{"sessionId": s.id, "contextUsagePercentage": 1.5})
		if a.flags.agent != "" && a.flags.agent != "kiro_default" && a.flags.agent != "reviewer" {
			_ = a.conn.NotifyExtension(bg, "_kiro.dev/agent/not_found", map[string]any{"sessionId": s.id, "agent": a.flags.agent})
		}
		close(s.ready)
	})
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id), Modes: a.modes(), Models: a.models()}, nil
}

// after runs f once the current response has been written (kiro's notifications follow
// session/new's answer).
func (a *acpAgent) after(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		time.Sleep(2 * time.Millisecond)
		f()
	}()
}

func (a *acpAgent) modes() *acp.SessionModeState {
	current := a.flags.agent
	if current == "" || current != "reviewer" {
		current = "kiro_default"
	}
	return &acp.SessionModeState{CurrentModeId: acp.SessionModeId(current), AvailableModes: []acp.SessionMode{
		{Id: "kiro_default", Name: "kiro_default"}, {Id: "reviewer", Name: "reviewer"},
	}}
}

func (a *acpAgent) models() *acp.SessionModelState {
	current := a.flags.model
	if current == "" {
		current = "auto"
	}
	var models []acp.ModelInfo
	for _, m := range []string{"auto", "claude-sonnet-4.5", "claude-haiku-4.5"} {
		models = append(models, acp.ModelInfo{ModelId: acp.ModelId(m), Name: m})
	}
	return &acp.SessionModelState{CurrentModelId: acp.ModelId(current), AvailableModels: models}
}

func (a *acpAgent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	id := string(p.SessionId)
	data, err := os.ReadFile(sessionFile(id))
	if err != nil || uuid.Validate(id) != nil {
		switch os.Getenv("FAKEQ_ACP_LOAD") {
		case "hang":
			<-ctx.Done()
			return acp.LoadSessionResponse{}, ctx.Err()
		case "exit":
			os.Exit(0)
		}
		return acp.LoadSessionResponse{}, acp.NewInternalError(map[string]any{"details": "Failed to start session: session " + id + " not found"})
	}
	s := &acpSession{id: id, cwd: p.Cwd, trusted: map[string]bool{}, ready: make(chan struct{}), mcp: p.McpServers}
	close(s.ready)
	a.mu.Lock()
	a.sessions[id] = s
	a.mu.Unlock()
	recordSession("load", id) // replies.go
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var turn struct{ Role, Text string }
		if json.Unmarshal([]byte(line), &turn) != nil {
			continue
		}
		u := acp.UpdateAgentMessageText(turn.Text)
		if turn.Role == "user" {
			u = acp.UpdateUserMessageText(turn.Text)
		}
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: u})
	}
	return acp.LoadSessionResponse{Modes: a.modes(), Models: a.models()}, nil
}

func sessionDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".kiro", "sessions", "cli")
}

func sessionFile(id string) string { return filepath.Join(sessionDir(), filepath.Base(id)+".jsonl") }

func (a *acpAgent) remember(id, role, text string) {
	line, _ := json.Marshal(map[string]string{"role": role, "text": text})
	f, err := os.OpenFile(sessionFile(id), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

func (a *acpAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	deafTurn() // FAKEQ_DEAF (deaf.go)
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"details": "unknown session " + string(p.SessionId)})
	}
	<-s.ready
	var text strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	a.remember(s.id, "user", text.String())
	recordSession("prompt", s.id) // replies.go
	start := time.Now()
	t := &acpTurn{a: a, s: s, ctx: ctx}
	if waitsForLogin() {
		<-ctx.Done() // FAKEQ_ACP_LOGIN=silent: the turn waits for a login without a word
		return acp.PromptResponse{}, ctx.Err()
	}
	if msg := os.Getenv("FAKEQ_ACP_MODEL_ERROR"); msg != "" {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"details": msg})
	}
	if generic() && os.Getenv("FAKEQ_ACP_SAY_SETTINGS") != "" {
		a.mu.Lock()
		settings := s.genericSettings()
		a.mu.Unlock()
		t.chunk(settings)
	}
	reason := t.run(text.String())
	a.remember(s.id, "agent", t.reply.String())
	if generic() {
		return acp.PromptResponse{StopReason: reason}, nil // no kiro metadata
	}
	_ = a.conn.NotifyExtension(context.Background(), "_kiro.dev/metadata", map[string]any{
		"sessionId": s.id, "contextUsagePercentage": 12.5, "turnDurationMs": time.Since(start).Milliseconds(),
		"meteringUsage": []map[string]any{{"value": 0.05, "unit": "credit", "unitPlural": "credits"}},
	})
	return acp.PromptResponse{StopReason: reason}, nil
}

// acpTurn is one prompt being answered.
type acpTurn struct {
	a     *acpAgent
	s     *acpSession
	ctx   context.Context
	reply strings.Builder
	first bool
}

func (t *acpTurn) send(u acp.SessionUpdate) {
	// A fresh context: updates after a cancel must still go out.
	_ = t.a.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: acp.SessionId(t.s.id), Update: u})
}

func (t *acpTurn) run(prompt string) acp.StopReason {
	if os.Getenv("FAKEQ_ACP_STALL") != "" {
		t.raw(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
			"sessionId": t.s.id, "update": map[string]any{"sessionUpdate": "stream_stall_notice", "message": "the model is slow to answer"}}})
	}
	if s := os.Getenv("FAKEQ_ACP_THOUGHT"); s != "" {
		t.send(acp.UpdateAgentThoughtText(unescape(s)))
	}
	plan := os.Getenv("FAKEQ_ACP_PLAN") != ""
	if plan {
		t.send(acp.UpdatePlan(
			acp.PlanEntry{Content: "Look around", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusInProgress},
			acp.PlanEntry{Content: "Answer", Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending},
		))
	}
	if list := os.Getenv("FAKEQ_ACP_TOOLS"); list != "" {
		for i, spec := range strings.Split(list, ",") {
			if reason, stop := t.tool(i+1, strings.TrimSpace(spec)); stop {
				return reason
			}
		}
	}
	t.unasked()
	switch os.Getenv("FAKEQ_ACP_BAD") {
	case "die":
		t.chunk("partial answer\n")
		fmt.Fprintln(os.Stderr, "error: the model stream broke")
		os.Exit(1)
	case "malformed":
		t.chunk("partial answer\n")
		_, _ = t.a.out.Write([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + "\n"))
		time.Sleep(time.Minute)
	case "hang":
		t.chunk("partial answer\n")
		time.Sleep(10 * time.Minute)
	}
	if os.Getenv("FAKEQ_ACP_SUBAGENT") != "" {
		t.subagent()
	}
	if c, err := strconv.ParseFloat(os.Getenv("FAKEQ_ACP_CREDITS"), 64); err == nil { // replies.go
		_ = t.a.conn.NotifyExtension(context.Background(), "_kiro.dev/metadata", map[string]any{
			"sessionId": t.s.id, "meteringUsage": []map[string]any{{"value": c, "unit": "credit", "unitPlural": "credits"}},
		})
	}
	if !t.answer(prompt) {
		return acp.StopReasonCancelled
	}
	if plan {
		t.send(acp.UpdatePlan(
			acp.PlanEntry{Content: "Look around", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusCompleted},
			acp.PlanEntry{Content: "Answer", Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusCompleted},
		))
	}
	return acp.StopReasonEndTurn
}

// raw writes one line the SDK cannot encode (an old or newer kiro's), in order with the rest.
func (t *acpTurn) raw(v any) {
	line, _ := json.Marshal(v)
	_, _ = t.a.out.Write(append(line, '\n'))
}

// subagent streams as kiro's subagents do, under a session of its own, and reports its result to
// the turn as a "Summarizing" tool call.
func (t *acpTurn) subagent() {
	sub := acp.SessionId(uuid.NewString())
	bg := context.Background()
	_ = t.a.conn.SessionUpdate(bg, acp.SessionNotification{SessionId: sub, Update: acp.UpdateAgentMessageText("subagent thinking out loud\n")})
	_ = t.a.conn.NotifyExtension(bg, "_kiro.dev/metadata", map[string]any{
		"sessionId": string(sub), "contextUsagePercentage": 80.0,
		"meteringUsage": []map[string]any{{"value": 0.25, "unit": "credit", "unitPlural": "credits"}},
	})
	t.send(acp.StartToolCall("tooluse_subagent", "Summarizing", acp.WithStartKind(acp.ToolKindOther),
		acp.WithStartStatus(acp.ToolCallStatusCompleted), acp.WithStartRawInput(map[string]any{"taskResult": "the subagent found 3 files"})))
}

// chunk sends one piece of the reply, stamping the first as chat does.
func (t *acpTurn) chunk(s string) {
	before := time.Now()
	if os.Getenv("FAKEQ_ACP_BARE") != "" {
		t.raw(map[string]any{"content": s, "type": "text"})
	} else {
		t.send(acp.UpdateAgentMessageText(s))
	}
	if t.reply.Len() < 1<<20 {
		t.reply.WriteString(s)
	}
	if !t.first {
		t.first = true
		if f := os.Getenv("FAKEQ_FIRST_STAMP"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
		}
		if f := os.Getenv("FAKEQ_BEFORE_STAMP"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.FormatInt(before.UnixNano(), 10)), 0o600)
		}
	}
}

// answer sends the reply the environment asks for; false when the turn was cancelled meanwhile.
func (t *acpTurn) answer(prompt string) bool {
	interval := envDuration("FAKEQ_INTERVAL")
	emit := func(s string) bool {
		if t.ctx.Err() != nil {
			return false
		}
		t.chunk(s)
		if interval > 0 {
			select {
			case <-time.After(interval):
			case <-t.ctx.Done():
				return false
			}
		}
		return true
	}
	if d := envDuration("FAKEQ_DELAY"); d > 0 {
		select {
		case <-time.After(d):
		case <-t.ctx.Done():
			return false
		}
	}
	if os.Getenv("FAKEQ_ECHO_PROMPT") != "" && !emit(prompt+"\n") {
		return false
	}
	// FAKEQ_BYTES 12 lines a chunk (1008 bytes): 200 MB in small pieces without making the fake,
	// rather than the client, what a benchmark measures.
	return emitKnobs(12, emit)
}

// Cancel has nothing to do: the SDK has cancelled the prompt's context already (the "hang" mode
// ignores that context).
func (a *acpAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *acpAgent) SetSessionMode(_ context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	if generic() {
		return a.genericSetMode(p)
	}
	return acp.SetSessionModeResponse{}, nil
}

// HandleExtensionMethod answers kiro's _kiro.dev/session/terminate: the session leaves the
// process (a prompt to it fails until it is loaded again); its file stays. Other extension
// methods are unknown.
func (a *acpAgent) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if generic() {
		return a.genericExtension(ctx, method, params)
	}
	if method != "_kiro.dev/session/terminate" {
		return nil, acp.NewMethodNotFound(method)
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.SessionID == "" {
		return nil, acp.NewInvalidParams(map[string]any{"details": "sessionId is required"})
	}
	a.mu.Lock()
	delete(a.sessions, p.SessionID)
	a.mu.Unlock()
	if f := os.Getenv("FAKEQ_ACP_TERMINATED"); f != "" {
		if out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_, _ = out.WriteString(p.SessionID + "\n")
			_ = out.Close()
		}
	}
	return map[string]any{}, nil
}

// The methods kiro's v2 engine leaves unhandled answer -32601.

func (a *acpAgent) Authenticate(_ context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if generic() {
		return a.genericAuthenticate(p)
	}
	return acp.AuthenticateResponse{}, acp.NewMethodNotFound(acp.AgentMethodAuthenticate)
}

func (a *acpAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func (a *acpAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *acpAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *acpAgent) SetSessionConfigOption(_ context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	if generic() {
		return a.genericSetConfig(p)
	}
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// callMCP calls TOOL of the HTTP MCP server SERVER (arg "SERVER/TOOL") given in session/new or
// session/load, as kiro does with the HTTP servers it honours, and returns the tool's text. A
// server that is not there (kiro ignores stdio ones) gives "done" without a call, as before.
func (t *acpTurn) callMCP(arg string) (string, error) {
	server, tool, _ := strings.Cut(arg, "/")
	for _, m := range t.s.mcp {
		if m.Http == nil || m.Http.Name != server {
			continue
		}
		hdr := http.Header{}
		for _, h := range m.Http.Headers {
			hdr.Set(h.Name, h.Value)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "fakeq", Version: "1"}, nil)
		cs, err := c.Connect(t.ctx, &mcp.StreamableClientTransport{Endpoint: m.Http.Url,
			HTTPClient: &http.Client{Transport: headerTransport{hdr}}}, nil)
		if err != nil {
			return "", fmt.Errorf("MCP server %s: %w", server, err)
		}
		defer cs.Close()
		res, err := cs.CallTool(t.ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "from fakeq"}})
		if err != nil {
			return "", fmt.Errorf("MCP server %s, tool %s: %w", server, tool, err)
		}
		var out strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				out.WriteString(tc.Text)
			}
		}
		return out.String(), nil
	}
	return "done", nil
}

// headerTransport adds the MCP server entry's headers to every request.
type headerTransport struct{ h http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}
