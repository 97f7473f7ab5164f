package acpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/mcpbridge"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/stdiorpc"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// Proxy is the proxy path: the editor's sessions map onto sessions of one `<agent> acp` process
// (kiro-cli acp), started with the first session that needs it and again after it died. Every
// session/update of the agent reaches the editor under qkit's session id, as the agent sent it but
// for its text (filtered as on every path) and tool titles (escaped), see shown; the agent's
// requests (permission, fs/*, terminal/*) go to the editor when it advertised the capability,
// and fs/* is otherwise served from disk, each under one rule: paths inside the session's folder,
// and a write or a command only under the editor's permission (access). qkit adds what
// the agent lacks: its slash commands, the context files with a session's first prompt, the
// session table (list, load after a restart, resume, close), the model as a config option, the
// protocol's usage_update from kiro's private metadata, and the editor's stdio MCP servers over a
// loopback HTTP bridge.
type Proxy struct {
	o      Options
	ctx    context.Context
	bridge *mcpbridge.Bridge

	mu       sync.Mutex
	conn     *acpclient.Conn // nil until started, and after it died
	starting chan struct{}   // closed when a start in progress ends
	notACP   error           // the agent does not speak ACP: new sessions take the text path
	byAgent  map[string]*Session
	byID     map[string]*Session
	early    map[string][]earlyNote // notifications for agent sessions not registered yet
	opening  int                    // session/new and loads in flight: only then can a session register late
	closed   map[string]bool        // agent sessions closed here: what they still send is dropped
	watchers sync.WaitGroup         // watch of every agent started: shutdown waits for them
	down     bool                   // shutdown began: no agent is started any more
}

// earlyNote is a notification that came before its session was registered (the updates kiro
// sends right after answering session/new).
type earlyNote struct {
	method string
	params []byte
}

// maxEarly bounds the notifications kept for one unregistered agent session.
const maxEarly = 256

// beginOpen marks a session/new or load in flight: what the agent sends for a session id it does
// not know yet is kept for it. The returned func ends the mark; when no open is left, what no
// session took is dropped (kiro's subagents notify under session ids that never register).
func (p *Proxy) beginOpen() (end func()) {
	p.mu.Lock()
	p.opening++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.opening--; p.opening == 0 {
			clear(p.early)
		}
		p.mu.Unlock()
	}
}

// Session is one editor session on the proxy path.
type Session struct {
	id, cwd string
	bridge  *mcpbridge.Session
	servers []acp.McpServer // what the agent is given: the editor's HTTP servers and the bridged ones

	// sendMu keeps the session's lines in order while the ones that waited go out.
	sendMu  sync.Mutex
	mu      sync.Mutex
	agentID string
	conn    *acpclient.Conn // the process the agent session lives in
	ready   bool            // the editor knows the session: updates go out at once
	mute    bool            // session/resume: the agent's replay is not forwarded
	queued  [][]byte
	cmds    []acp.AvailableCommand // the agent's latest commands
	models  *acp.SessionModelState
	modes   *acp.SessionModeState
	config  []acp.SessionConfigOption // the agent's config options (its model choice, on newer agents)
	inTurn  bool
	context float64         // the share of the context window kiro last reported, in percent
	text    strings.Builder // the running turn's reply, for the transcript (its first transcriptKeep bytes)
	cut     bool            // the reply was longer than transcriptKeep
	// history: the agent lost the session and a new one took its place; the next prompt carries
	// qkit's transcript.
	history bool
	// always are the tools the editor allowed always in this session (see access); it has a
	// lock of its own.
	always approval.Grants
	// tools and usage are the running turn's tool calls (in the order they started, as they
	// ended) and what the agent said it cost, for the transcript (qkit sessions show).
	tools agent.ToolLog
	usage agent.Usage
	// deadline is the running turn's agent.timeout (nil: none), paused while the editor decides a
	// permission request.
	deadline *acpclient.Deadline
	// capped is the running turn's reply measured against agent.max_response_size.
	capped capped
	// replyText and thoughtText filter the agent's text for the editor, keptText the reply for
	// the transcript (see shown); each starts afresh with a turn.
	replyText, thoughtText, keptText termtext.Stripper
}

// capped holds a turn's reply to agent.max_response_size as the runner does on every other path:
// chunks go out whole as they come while output.Live lets them; the rest is held (only up to the
// limit, so memory stays flat) and counted, and the turn's end sends what the runner would keep of
// it, cut where it cuts, with its notice.
type capped struct {
	limit int64
	live  output.Live
	held  []byte
	total int64 // text bytes the agent sent
}

func newCapped(limit int64) capped { return capped{limit: limit, live: output.NewLive(limit)} }

// pass counts one chunk of text and reports whether it goes out as it came.
func (c *capped) pass(text string) bool {
	c.total += int64(len(text))
	if c.live.Whole(text) {
		return true
	}
	if room := c.limit - c.live.Shown() - int64(len(c.held)); room > 0 {
		c.held = append(c.held, text[:min(int64(len(text)), room)]...)
	}
	return false
}

// finish is the text still to send when the turn ends (what was held, cut and with the notice
// when the reply went past the limit) and the cut made, nil when none was.
func (c *capped) finish() (string, *output.Truncation) {
	shown := c.live.Shown()
	if c.total == shown {
		return "", nil
	}
	if c.total <= c.limit {
		return string(c.held), nil
	}
	// Live stopped at least CutHoldBack bytes before the limit, so the cut, within the last 100
	// bytes, falls in what was held.
	cut := output.CutPoint(c.held)
	t := &output.Truncation{Original: c.total, Kept: shown + int64(cut), Limit: c.limit}
	return string(c.held[:cut]) + t.Notice(), t
}

// transcriptKeep is how much of a proxied reply qkit's transcript keeps. The agent keeps the whole
// conversation itself; qkit's copy serves the session's title, a replay when the agent lost its
// session, and the history sent to a new one (which is budgeted far below this anyway), so fifty
// sessions streaming at once do not hold fifty whole replies.
const transcriptKeep = 256 << 10

// New is the proxy of one `acp serve` connection, which lives as long as ctx; it starts no agent
// until one is needed. Shutdown stops what it started.
func New(ctx context.Context, o Options) *Proxy {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Proxy{o: o, ctx: ctx, bridge: mcpbridge.New(o.Logger), byAgent: map[string]*Session{},
		byID: map[string]*Session{}, early: map[string][]earlyNote{}, closed: map[string]bool{}}
}

// errNotACP marks the agent not speaking ACP.
var errNotACP = errors.New("the agent does not speak ACP")

// current returns the running agent, starting it when needed. An agent that does not speak ACP is
// remembered: every later call fails at once with errNotACP, and new sessions take the text path.
func (p *Proxy) current(ctx context.Context) (*acpclient.Conn, error) {
	for {
		p.mu.Lock()
		if p.notACP != nil {
			p.mu.Unlock()
			return nil, p.notACP
		}
		if p.conn != nil && p.isDead(p.conn) {
			p.conn = nil // died, and watch has not caught up yet: a turn that saw it die may come back at once
		}
		if p.conn != nil {
			c := p.conn
			p.mu.Unlock()
			return c, nil
		}
		if p.starting != nil {
			wait := p.starting
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		p.starting = make(chan struct{})
		p.mu.Unlock()
		c, err := p.start(ctx)
		p.mu.Lock()
		close(p.starting)
		p.starting = nil
		var nacp *acpclient.NotACPError
		switch {
		case errors.As(err, &nacp):
			p.notACP = fmt.Errorf("%w: %w", errNotACP, err)
			p.o.Logger.Warn("the agent does not speak ACP: sessions take the text path (chat --no-interactive)", "reason", err)
		case err == nil && p.down:
			p.mu.Unlock()
			c.Close()
			return nil, errors.New("acp serve is shutting down")
		case err == nil:
			p.conn = c
			p.watchers.Add(1)
			go p.watch(c)
			p.learn(c)
		}
		p.mu.Unlock()
		if err != nil {
			return nil, p.errOr(err)
		}
		return c, nil
	}
}

func (p *Proxy) errOr(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.notACP != nil {
		return p.notACP
	}
	return err
}

// Available reports whether new sessions take the proxy path; it starts the agent to know.
func (p *Proxy) Available(ctx context.Context) bool {
	_, err := p.current(ctx)
	return !errors.Is(err, errNotACP)
}

// start runs the agent in ACP mode (agent.Description.ACPArgv): `<agent> acp [--agent A]` for q
// and kiro-cli, another ACP agent's command line as given (its sessions get --agent as their
// mode). The model is not passed: kiro ignores session/set_model in a process started with
// --model, and each session has its own.
func (p *Proxy) start(ctx context.Context) (*acpclient.Conn, error) {
	o := p.o
	d := agent.Describe(o.Limits.Command)
	argv := p.argv()
	copts := acpclient.Options{
		Command:        argv[0],
		Args:           argv[1:],
		Agent:          d,
		Extension:      p.extension,
		Logger:         o.Logger,
		Grace:          o.Limits.Grace,
		OnNotification: p.notify,
		OnEvent:        p.event,
		Permission:     p.permission,
		Files:          proxyFiles{p},
		Access:         p.access,
	}
	if p.o.Editor.Caps().Terminal {
		copts.Terminals = proxyTerminals{p}
	}
	return acpclient.Start(ctx, copts)
}

// argv is the agent's command line in ACP mode.
func (p *Proxy) argv() []string {
	return agent.Describe(p.o.Limits.Command).ACPArgv(p.o.Agent, "", false, nil)
}

// cacheFile keeps what agents answered to initialize (acpclient.InitializeCacheFile), "" none.
func (p *Proxy) cacheFile() string {
	if p.o.Limits.StateDir == "" {
		return ""
	}
	return acpclient.InitializeCacheFile(p.o.Limits.StateDir)
}

// learn keeps what the agent c answered to initialize, so that the next `acp serve` answers
// the editor's initialize without starting it.
func (p *Proxy) learn(c *acpclient.Conn) {
	if f := p.cacheFile(); f != "" {
		if err := acpclient.RememberInitialize(f, p.argv(), c.Info()); err != nil {
			p.o.Logger.Warn("could not remember the agent's capabilities", "file", f, "err", err)
		}
	}
}

// learned is what the agent answered to initialize: the running agent's answer, else the one
// kept for this command line and binary; ok is false when neither is known.
func (p *Proxy) learned() (acp.InitializeResponse, bool) {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		return c.Info(), true
	}
	if f := p.cacheFile(); f != "" {
		return acpclient.LearnedInitialize(f, p.argv())
	}
	return acp.InitializeResponse{}, false
}

// watch forgets a dead agent; its sessions are loaded into the next one when they are used. A
// dead agent may still run (it sent broken JSON, or closed its stdout) or have left processes
// behind: it is stopped, with its process group.
func (p *Proxy) watch(c *acpclient.Conn) {
	defer p.watchers.Done()
	<-c.Dead()
	p.mu.Lock()
	if p.conn == c {
		p.conn = nil
	}
	p.mu.Unlock()
	if p.ctx.Err() == nil {
		p.o.Logger.Warn("the ACP agent ended; its sessions are loaded again when next used", "err", c.Err(), "stderr", c.Stderr())
	}
	c.Close()
}

// Shutdown stops the agent and every bridged MCP server.
func (p *Proxy) Shutdown() {
	p.mu.Lock()
	p.down = true
	c := p.conn
	p.conn = nil
	all := make([]*Session, 0, len(p.byID))
	for _, s := range p.byID {
		all = append(all, s)
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
	for _, s := range all {
		if s.bridge != nil {
			s.bridge.Close()
		}
	}
	p.bridge.Close()
	p.watchers.Wait() // the agents that died before are stopped too
}

// register makes s reachable by its agent session id, and takes the notifications that came first.
func (p *Proxy) register(s *Session) {
	p.mu.Lock()
	s.mu.Lock()
	agentID := s.agentID
	s.mu.Unlock()
	p.byAgent[agentID] = s
	p.byID[s.id] = s
	delete(p.closed, agentID)
	early := p.early[agentID]
	delete(p.early, agentID)
	p.mu.Unlock()
	for _, n := range early {
		p.deliver(s, agentID, n.method, n.params)
	}
}

// Session is the live session id on the proxy path, or nil (not opened on it in this connection).
func (p *Proxy) Session(id string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byID[id]
}

func (p *Proxy) byAgentID(agentID string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byAgent[agentID]
}

// notify receives every notification of the agent (on its reader, in order) and forwards it.
func (p *Proxy) notify(method string, params json.RawMessage) {
	agentID := sessionIDOf(params)
	if agentID == "" && strings.HasPrefix(method, "_") {
		p.extensionNote(method, params) // an agent's own notification about no session
		return
	}
	p.mu.Lock()
	s := p.byAgent[agentID]
	if s == nil {
		if p.opening > 0 && agentID != "" && !p.closed[agentID] && len(p.early[agentID]) < maxEarly {
			p.early[agentID] = append(p.early[agentID], earlyNote{method, bytes.Clone(params)})
		}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.deliver(s, agentID, method, params)
}

// deliver forwards one notification of s's agent session to the editor, under qkit's id.
func (p *Proxy) deliver(s *Session, agentID, method string, params []byte) {
	params = replaceSessionID(params, agentID, s.id)
	if method == acp.ClientMethodSessionUpdate {
		var pass bool
		if params, pass = s.shown(params, p.o.Limits.RawText()); !pass {
			return
		}
	}
	if method == acp.ClientMethodSessionUpdate && bytes.Contains(params, []byte(`"available_commands_update"`)) {
		var n acp.SessionNotification
		if json.Unmarshal(params, &n) == nil && n.Update.AvailableCommandsUpdate != nil {
			s.mu.Lock()
			s.cmds = n.Update.AvailableCommandsUpdate.AvailableCommands
			s.mu.Unlock()
			n.Update.AvailableCommandsUpdate.AvailableCommands = p.mergedCommands(s)
			n.SessionId = acp.SessionId(s.id) // Go's decoder also took keys like "SessionID"
			if b, err := json.Marshal(n); err == nil {
				params = b
			}
		}
	}
	line := make([]byte, 0, len(params)+64)
	line = append(line, `{"jsonrpc":"2.0","method":`...)
	line = stdiorpc.AppendJSONString(line, method)
	line = append(line, `,"params":`...)
	line = append(line, params...)
	line = append(line, "}\n"...)
	s.forward(p, line)
}

// shown is a session/update of the agent's as the editor may show it, and whether it goes out at
// all. The agent's text reaches the editor through the filter it goes through on every other path
// (termtext.Stripper, as acpclient.Run and the chat runner read it; the text path's replies come
// filtered that way): a reply or thought chunk loses escape sequences, control and bidi
// characters, one Stripper a stream, so a sequence split across chunks goes whole, and a chunk
// with nothing left to show is dropped. Only agent.raw_output with strip_ansi off (raw) keeps the
// text as sent. A tool call's title, which a person reads in the thread and in the permission
// dialog (see permission), is escaped (termtext.VisibleLine), raw or not. A reply chunk of the
// running turn is then measured against agent.max_response_size (capped). What needs no change
// goes out as the agent wrote it.
func (s *Session) shown(params []byte, raw bool) ([]byte, bool) {
	chunk := bytes.Contains(params, []byte(`"agent_message_chunk"`)) || bytes.Contains(params, []byte(`"agent_thought_chunk"`))
	if !chunk && !bytes.Contains(params, []byte(`"title"`)) && !bytes.Contains(params, []byte(`\u`)) { // a key may be escaped
		return params, true
	}
	// Keys are read exactly as spelt, as the editor's JSON.parse reads them (Go's struct decoder
	// would also take "Title", and the last of "title" and "Title").
	top := object(params)
	update := object(top["update"])
	kind, _ := jsonString(update["sessionUpdate"])
	switch kind {
	case "tool_call", "tool_call_update":
		title, ok := jsonString(update["title"])
		if !ok || termtext.VisibleLine(title) == title {
			return params, true
		}
		update["title"], _ = json.Marshal(termtext.VisibleLine(title))
	case "agent_message_chunk", "agent_thought_chunk":
		content := object(update["content"])
		typ, _ := jsonString(content["type"])
		text, ok := jsonString(content["text"])
		if typ != "text" || !ok {
			return params, true
		}
		s.mu.Lock()
		shown := text
		if !raw {
			st := &s.replyText
			if kind == "agent_thought_chunk" {
				st = &s.thoughtText
			}
			shown = string(st.Strip(nil, []byte(text)))
		}
		whole := shown == "" || kind != "agent_message_chunk" || s.passText(shown)
		s.mu.Unlock()
		switch {
		case shown == "" || !whole:
			return nil, false
		case shown == text:
			return params, true
		}
		content["text"], _ = json.Marshal(shown)
		update["content"], _ = json.Marshal(content)
	default:
		return params, true
	}
	top["update"], _ = json.Marshal(update)
	b, err := json.Marshal(top)
	if err != nil {
		return nil, false // not sent unfiltered
	}
	return b, true
}

// object is the JSON object b by its keys, nil when b is none.
func object(b []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// jsonString is the JSON string b; ok is false when b is none.
func jsonString(b []byte) (s string, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	return s, json.Unmarshal(b, &s) == nil
}

// passText measures a reply chunk's text of the running turn against agent.max_response_size; it
// reports whether the chunk goes out as it came. s.mu is held.
func (s *Session) passText(text string) bool {
	if !s.inTurn || s.capped.limit <= 0 {
		return true
	}
	return s.capped.pass(text)
}

// forward writes one notification line, or keeps it until the editor knows the session.
func (s *Session) forward(p *Proxy, line []byte) {
	s.mu.Lock()
	switch {
	case s.mute:
		s.mu.Unlock()
		return
	case !s.ready:
		if len(s.queued) < maxEarly {
			s.queued = append(s.queued, line)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := p.o.Editor.Send(line); err != nil {
		p.o.Logger.Debug("session/update not forwarded", "session", s.id, "err", err)
	}
}

// MakeReady sends what waited for the editor to know the session, then qkit's and the agent's
// commands.
func (p *Proxy) MakeReady(s *Session) {
	s.sendMu.Lock() // a line that finds the session ready waits for these
	defer s.sendMu.Unlock()
	s.mu.Lock()
	queued := s.queued
	s.queued, s.ready = nil, true
	s.mu.Unlock()
	sentCommands := false
	for _, line := range queued {
		sentCommands = sentCommands || bytes.Contains(line, []byte(`"available_commands_update"`))
		if err := p.o.Editor.Send(line); err != nil {
			return
		}
	}
	if !sentCommands && p.o.Editor.Commands() != nil {
		line, err := updateLine(s.id, acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: p.mergedCommands(s)}})
		if err == nil {
			err = p.o.Editor.Send(line)
		}
		if err != nil {
			p.o.Logger.Debug("session/update not sent", "session", s.id, "err", err)
		}
	}
}

// mergedCommands are qkit's slash commands, then the agent's whose names qkit does not use (a
// prompt naming one of qkit's commands is answered by qkit).
func (p *Proxy) mergedCommands(s *Session) []acp.AvailableCommand {
	out := slices.Clone(p.o.Editor.Commands())
	own := map[string]bool{}
	for _, c := range out {
		own[c.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cmds {
		if !own[c.Name] {
			out = append(out, c)
		}
	}
	if out == nil {
		out = []acp.AvailableCommand{}
	}
	return out
}

// event receives the agent's updates as typed events: the reply's text for the transcript, and
// kiro's usage, which the editor gets as the protocol's usage_update.
func (p *Proxy) event(agentID string, ev agent.Event) {
	s := p.byAgentID(agentID)
	if s == nil {
		// kiro's subagents report under their own session ids: their credits are the cost of the
		// turn that started them, when one turn runs (with several, whose is unknown).
		if ev.Type == agent.EventUsage && ev.Usage != nil && ev.Usage.Credits != 0 {
			if parent := p.soleTurn(); parent != nil {
				parent.mu.Lock()
				parent.usage.Credits += ev.Usage.Credits
				parent.mu.Unlock()
				p.usage(parent, &agent.Usage{Credits: ev.Usage.Credits}, agentID)
			}
		}
		return
	}
	s.record(ev)
	switch ev.Type {
	case agent.EventMessage:
		s.mu.Lock()
		if s.inTurn {
			text := ev.Text // the reply as the editor got it (shown), which the size cap measured
			if !p.o.Limits.RawText() {
				text = string(s.keptText.Strip(nil, []byte(text)))
			}
			if room := transcriptKeep - s.text.Len(); room >= len(text) {
				s.text.WriteString(text)
			} else {
				s.cut = true
			}
		}
		s.mu.Unlock()
	case agent.EventUsage:
		p.usage(s, ev.Usage, "")
	}
}

// record keeps the running turn's tool calls and usage, as acpclient.Run keeps a run's.
func (s *Session) record(ev agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inTurn {
		return
	}
	if ev.Type == agent.EventUsage {
		if ev.Usage != nil {
			s.usage.Add(*ev.Usage)
		}
		return
	}
	s.tools.Record(ev)
}

// soleTurn is the session whose turn is running when it is the only one.
func (p *Proxy) soleTurn() *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	var found *Session
	for _, s := range p.byID {
		s.mu.Lock()
		in := s.inTurn
		s.mu.Unlock()
		if in {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// usage sends kiro's usage to the editor as s's usage_update. A subagent's (from its own agent
// session) carries only its credits, beside the context share s last reported.
func (p *Proxy) usage(s *Session, u *agent.Usage, subagent string) {
	s.mu.Lock()
	if subagent == "" {
		if u != nil && u.ContextPercent > 0 {
			s.context = u.ContextPercent
		}
	} else {
		u = &agent.Usage{Credits: u.Credits, ContextPercent: s.context}
	}
	s.mu.Unlock()
	up := usageUpdate(u)
	if up == nil {
		return
	}
	if subagent != "" {
		up.Meta["qkit"].(map[string]any)["subagentSession"] = subagent
	}
	if line, err := updateLine(s.id, acp.SessionUpdate{UsageUpdate: up}); err == nil {
		s.forward(p, line)
	}
}

// usageUpdate turns kiro's _kiro.dev/metadata into ACP's usage_update (unstable in acp-go-sdk
// v0.13.0, stable in the schema the TypeScript SDK validates): kiro reports the share of the
// context window in use, not tokens, so size is 100 and used the percentage; the credits, which
// are no currency, ride in _meta with the rest. A keep-alive without a percentage sends nothing.
func usageUpdate(u *agent.Usage) *acp.SessionUsageUpdate {
	if u == nil || (u.ContextPercent == 0 && u.Credits == 0) {
		return nil
	}
	meta := map[string]any{"contextUsagePercentage": u.ContextPercent}
	if u.Credits != 0 {
		meta["credits"] = u.Credits
	}
	if u.TurnDurationMs != 0 {
		meta["turnDurationMs"] = u.TurnDurationMs
	}
	used := int(math.Round(min(max(u.ContextPercent, 0), 100)))
	return &acp.SessionUsageUpdate{Used: used, Size: 100, Meta: map[string]any{"qkit": map[string]any{"source": acpclient.KiroMetadata, "kiro": meta}}}
}

// sessionIDOf reads the "sessionId" of a notification's params without decoding the rest (the
// SDKs write it first).
func sessionIDOf(params []byte) string {
	dec := json.NewDecoder(bytes.NewReader(params))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "sessionId" {
			v, _ := dec.Token()
			s, _ := v.(string)
			return s
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// replaceSessionID puts qkit's session id in place of the agent's. The agents write the field
// once and compactly, without escapes: then it is replaced in place. Anything else (a nested or
// repeated "sessionId", an escaped key) is decoded and encoded again, so that the params carry one
// top-level sessionId, qkit's, however the editor reads duplicate keys.
func replaceSessionID(params []byte, from, to string) []byte {
	if from == to {
		return params
	}
	old := stdiorpc.AppendJSONString([]byte(`"sessionId":`), from)
	if i := bytes.Index(params, old); i >= 0 && bytes.Count(params, []byte("sessionId")) == 1 && !bytes.Contains(params, []byte(`\u00`)) {
		out := make([]byte, 0, len(params)+len(to)-len(from))
		out = append(out, params[:i]...)
		out = stdiorpc.AppendJSONString(append(out, `"sessionId":`...), to)
		return append(out, params[i+len(old):]...)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	m["sessionId"], _ = json.Marshal(to)
	b, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return b
}

// agentServers splits the editor's MCP servers: HTTP and SSE ones go to the agent as given; stdio
// ones are started by qkit and offered over the bridge when the agent takes HTTP servers (kiro
// ignores stdio ones), and passed as given otherwise.
func (p *Proxy) agentServers(ctx context.Context, c *acpclient.Conn, cwd string, in []acp.McpServer) ([]acp.McpServer, *mcpbridge.Session, error) {
	var out []acp.McpServer
	var stdio []mcpbridge.Server
	httpOK := c.Info().AgentCapabilities.McpCapabilities.Http
	for _, s := range in {
		if s.Stdio != nil && httpOK {
			env := make([]string, 0, len(s.Stdio.Env))
			for _, e := range s.Stdio.Env {
				env = append(env, e.Name+"="+e.Value)
			}
			stdio = append(stdio, mcpbridge.Server{Name: s.Stdio.Name, Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env})
			continue
		}
		if s.Http != nil && s.Http.Headers == nil {
			h := *s.Http
			h.Headers = []acp.HttpHeader{} // kiro exits on an HTTP server whose headers are not an array
			s.Http = &h
		}
		out = append(out, s)
	}
	if len(stdio) == 0 {
		return out, nil, nil
	}
	b, err := p.bridge.Open(ctx, cwd, stdio)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range b.Endpoints {
		out = append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Type: "http", Name: e.Name, Url: e.URL,
			Headers: []acp.HttpHeader{{Name: e.Header[0], Value: e.Header[1]}}}})
	}
	return out, b, nil
}

// Create opens the agent's side of a new session and fills rec's backend and agent session.
func (p *Proxy) Create(ctx context.Context, rec *sessions.SessionRecord, servers []acp.McpServer) (*Session, error) {
	defer p.beginOpen()()
	c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	agentServers, b, err := p.agentServers(ctx, c, rec.Cwd, servers)
	if err != nil {
		return nil, err
	}
	resp, err := c.NewSession(ctx, rec.Cwd, agentServers)
	if err != nil {
		if b != nil {
			b.Close()
		}
		return nil, err
	}
	s := &Session{id: rec.ID, cwd: rec.Cwd, bridge: b, servers: agentServers, agentID: string(resp.SessionId), conn: c,
		models: resp.Models, modes: resp.Modes, config: resp.ConfigOptions}
	rec.Backend, rec.AgentSession = sessions.BackendACP, s.agentID
	if err := p.setAgentMode(ctx, s); err != nil {
		if b != nil {
			b.Close()
		}
		return nil, err
	}
	if rec.Model != "" {
		if err := p.SetAgentModel(ctx, s, rec.Model); err != nil {
			p.o.Logger.Warn("the session's model was not set", "session", rec.ID, "model", rec.Model, "err", err)
		}
	}
	p.register(s)
	return s, nil
}

// Reopen makes a stored session live in this connection (session/load, session/resume, or a
// prompt after the agent died). The agent loads its own session; its replay reaches the editor
// when replay is set. It reports whether the agent replayed: when it could not load the session
// (kiro may have lost it, hang, or fail), a new agent session takes its place, the caller replays
// qkit's transcript, and the next prompt carries the conversation.
func (p *Proxy) Reopen(ctx context.Context, rec sessions.SessionRecord, servers []acp.McpServer, replay bool) (*Session, bool, error) {
	defer p.beginOpen()()
	c, err := p.current(ctx)
	if err != nil {
		return nil, false, err
	}
	s := p.Session(rec.ID)
	if s != nil {
		s.mu.Lock()
		live := s.conn == c
		s.mu.Unlock()
		if live {
			return s, false, nil // open already: the agent cannot replay it twice
		}
	} else {
		if servers == nil {
			_ = json.Unmarshal(rec.MCPServers, &servers)
		}
		agentServers, b, err := p.agentServers(ctx, c, rec.Cwd, servers)
		if err != nil {
			return nil, false, err
		}
		s = &Session{id: rec.ID, cwd: rec.Cwd, bridge: b, servers: agentServers, agentID: rec.AgentSession}
	}
	s.mu.Lock()
	s.conn, s.ready, s.mute = c, true, !replay
	s.mu.Unlock()
	p.register(s)
	resp, err := c.LoadSession(ctx, rec.AgentSession, rec.Cwd, s.servers)
	s.mu.Lock()
	s.mute = false
	s.mu.Unlock()
	if err == nil {
		s.mu.Lock()
		s.models, s.config = resp.Models, resp.ConfigOptions
		if resp.Modes != nil {
			s.modes = resp.Modes
		}
		s.mu.Unlock()
		if err := p.setAgentMode(ctx, s); err != nil {
			p.o.Logger.Warn("the session's mode was not set", "session", rec.ID, "err", err)
		}
		if rec.Model != "" {
			_ = p.SetAgentModel(ctx, s, rec.Model)
		}
		return s, true, nil
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	p.o.Logger.Warn("the agent could not load its session; a new one continues the conversation", "session", rec.ID, "agent_session", rec.AgentSession, "err", err)
	if c.Err() != nil || p.isDead(c) {
		// kiro exited on the unknown session, or hung and was given up: start afresh.
		c.Close()
		p.forget(c)
		if c, err = p.current(ctx); err != nil {
			return nil, false, err
		}
	}
	fresh, err := c.NewSession(ctx, rec.Cwd, s.servers)
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	delete(p.byAgent, s.agentID)
	p.mu.Unlock()
	s.mu.Lock()
	s.agentID, s.conn, s.models, s.config, s.history = string(fresh.SessionId), c, fresh.Models, fresh.ConfigOptions, true
	if fresh.Modes != nil {
		s.modes = fresh.Modes
	}
	s.mu.Unlock()
	p.register(s)
	if err := p.o.Store.SetAgentSession(context.WithoutCancel(ctx), rec.ID, string(fresh.SessionId), p.o.Now()); err != nil {
		p.o.Logger.Warn("the new agent session was not recorded", "session", rec.ID, "err", err)
	}
	if rec.Model != "" {
		_ = p.SetAgentModel(ctx, s, rec.Model)
	}
	return s, false, nil
}

// forget drops c as the running agent (it died or was closed), so the next use starts another.
func (p *Proxy) forget(c *acpclient.Conn) {
	p.mu.Lock()
	if p.conn == c {
		p.conn = nil
	}
	p.mu.Unlock()
}

func (p *Proxy) isDead(c *acpclient.Conn) bool {
	select {
	case <-c.Dead():
		return true
	default:
		return false
	}
}

// kiroTerminate is kiro's request to drop a session from the running process ({sessionId}, an
// empty answer); the session stays on disk and can be loaded again. Without it a long-lived
// `kiro-cli acp` keeps every closed session in memory until it exits.
const kiroTerminate = "_kiro.dev/session/terminate"

// terminateWait bounds how long session/close waits for the agent to drop its session.
const terminateWait = 5 * time.Second

// Close forgets the session, asks the agent to drop its side (kiro's session/terminate, sent to
// q and kiro-cli only; one without it answers method-not-found, which is fine) and stops its bridged MCP servers. A
// turn still running was cancelled by the session's actor. The agent is asked before close
// returns, so a session/load or resume that follows finds the session dropped, not dropped
// under it.
func (p *Proxy) Close(ctx context.Context, id string) {
	p.mu.Lock()
	s := p.byID[id]
	delete(p.byID, id)
	var agentID string
	var c *acpclient.Conn
	if s != nil {
		s.mu.Lock()
		agentID, c = s.agentID, s.conn
		delete(p.byAgent, agentID)
		s.mu.Unlock()
		// What the agent still sends for it would otherwise wait in early for a session that is
		// not coming.
		delete(p.early, agentID)
		p.closed[agentID] = true
	}
	p.mu.Unlock()
	if s == nil {
		return
	}
	if c != nil && !p.isDead(c) && agentID != "" && agent.Describe(p.o.Limits.Command).Builtin() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), terminateWait)
		_, err := c.SDK().CallExtension(tctx, kiroTerminate, map[string]string{"sessionId": agentID})
		cancel()
		if err != nil {
			p.o.Logger.Debug("the agent did not drop its session", "session", id, "agent_session", agentID, "err", err)
		}
	}
	if s.bridge != nil {
		s.bridge.Close()
	}
}

// Turn is how a turn on the proxy went, for qkit's transcript.
type Turn struct {
	// Kept is what the transcript keeps of the reply: the agent's own text, cut where the editor's
	// copy was cut (the size cap) or at transcriptKeep, without qkit's notices (sessionrec's rule).
	Kept string
	// Truncated: Kept is not the whole reply (the size cap, or transcriptKeep).
	Truncated bool
	// TimedOut: the turn hit agent.timeout and was cancelled.
	TimedOut bool
	// Stop is the agent's stop reason (cancelled when the caller's context ended); empty when an
	// error ended the turn.
	Stop acp.StopReason
	// Tools are the turn's tool calls in the order they started, as they ended.
	Tools []agent.ToolCall
	// Usage is what the agent reported the turn cost (zero: nothing).
	Usage agent.Usage
}

// Prompt runs one turn of session sessionID (in folder cwd) on the agent: the prompt's blocks as
// the editor sent them, with the context files in front of a session's first prompt. The agent's
// updates pass through while it runs. It returns how the turn went; when an error ended it, the
// Turn still has what the agent said and did before.
func (p *Proxy) Prompt(ctx context.Context, sessionID, cwd string, content []acp.ContentBlock) (turn Turn, err error) {
	o := p.o
	rec, err := o.Store.Get(ctx, sessionID)
	if err != nil {
		return turn, err
	}
	s := p.Session(sessionID)
	var c *acpclient.Conn
	if s != nil {
		s.mu.Lock()
		c = s.conn
		s.mu.Unlock()
	}
	if c != nil && p.isDead(c) {
		p.forget(c)
	}
	if s == nil || c == nil || p.isDead(c) {
		// The agent died since: load its session into a new one, without replaying it.
		if s, _, err = p.Reopen(ctx, rec, nil, false); err != nil {
			return turn, fmt.Errorf("the agent could not take the prompt: %w", err)
		}
	}
	s.mu.Lock()
	withHistory := s.history
	s.history = false
	agentID, c := s.agentID, s.conn
	s.mu.Unlock()
	blocks := p.agentBlocks(content, c.Info().AgentCapabilities.PromptCapabilities)
	hasMessages, err := o.Store.HasMessages(ctx, sessionID)
	if err != nil {
		return turn, err
	}
	var front []string
	if !hasMessages && o.Context != nil { // the session's first prompt
		block, warnings, err := o.Context(cwd, max(o.MaxTokens, 1), "")
		for _, w := range warnings {
			o.Logger.Warn(w, "session", sessionID)
		}
		if n := contextfiles.Notice(warnings); n != "" {
			p.say(s, n) // the editor's reader is told, as ask's is on stderr
		}
		if err != nil {
			return turn, fmt.Errorf("context files: %w", err)
		}
		if strings.TrimSpace(block) != "" {
			front = append(front, block)
		}
	}
	if withHistory {
		history, err := o.Store.Messages(ctx, sessionID)
		if err == nil && len(history) > 0 {
			h, _ := sessions.WithHistory(history, "", sessionrec.HistoryBytes(o.MaxTokens))
			front = append(front, h)
		}
	}
	if len(front) > 0 {
		blocks = append([]acp.ContentBlock{acp.TextBlock(strings.Join(front, "\n"))}, blocks...)
	}
	// agent.timeout bounds the turn as it bounds every run of the agent (acpclient.Run), the time
	// the editor takes to answer a permission request aside: the turn is cancelled, what the
	// agent said is kept, and the editor is told (end_turn, the runner's notice).
	turnCtx, cancelTurn := context.WithCancel(ctx)
	defer cancelTurn()
	var deadline *acpclient.Deadline
	var timedOut atomic.Bool
	if o.Limits.Timeout > 0 {
		deadline = acpclient.NewDeadline(o.Limits.Timeout, func() { timedOut.Store(true); cancelTurn() })
		defer deadline.Stop()
	}
	s.mu.Lock()
	s.inTurn, s.cut, s.deadline = true, false, deadline
	s.capped = newCapped(o.Limits.MaxResponseSize)
	s.replyText, s.thoughtText, s.keptText = termtext.Stripper{}, termtext.Stripper{}, termtext.Stripper{}
	s.text.Reset()
	s.tools, s.usage = agent.ToolLog{}, agent.Usage{}
	s.mu.Unlock()
	stop, err := c.Prompt(turnCtx, agentID, blocks)
	s.mu.Lock()
	s.inTurn, s.deadline = false, nil
	turn = Turn{Kept: s.text.String(), Tools: s.tools.Calls, Usage: s.usage}
	for i, t := range turn.Tools {
		turn.Tools[i] = approval.Named(t)
	}
	tail, truncated := s.capped.finish()
	s.capped = capped{}
	switch {
	case truncated != nil:
		// The transcript keeps what the editor was shown, as every other path keeps the runner's
		// cut; the editor had the notice, the transcript has Truncated.
		turn.Kept, turn.Truncated = turn.Kept[:min(len(turn.Kept), int(truncated.Kept))], true
		o.Logger.Warn(truncated.Warning(), "session", sessionID)
	case s.cut:
		turn.Truncated = true // the rest of the reply is in the agent's own session
	}
	s.text.Reset()
	s.tools = agent.ToolLog{}
	s.mu.Unlock()
	if tail != "" {
		p.say(s, tail)
	}
	switch {
	case ctx.Err() != nil:
		turn.Stop = acp.StopReasonCancelled
	case timedOut.Load():
		p.say(s, agent.TimeoutNotice(o.Limits.Timeout))
		turn.TimedOut = true
		turn.Stop = acp.StopReasonEndTurn
	case err != nil:
		if p.isDead(c) {
			err = fmt.Errorf("%w; the session is kept: prompt again (or load it) to go on", err)
		}
		return turn, err
	case stop == "":
		turn.Stop = acp.StopReasonEndTurn
	default:
		turn.Stop = stop
	}
	return turn, nil
}

// say sends qkit's own text to the editor as the agent's message in session s (a notice after the
// agent's reply).
func (p *Proxy) say(s *Session, text string) {
	line, err := updateLine(s.id, acp.SessionUpdate{AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{Content: acp.TextBlock(text)}})
	if err != nil {
		return
	}
	s.forward(p, line)
}

// agentBlocks is a prompt as the agent takes it: embedded text resources become text blocks (the
// form Options.BlockText gives them) for an agent without embeddedContext, which qkit advertises
// whatever the agent does.
func (p *Proxy) agentBlocks(blocks []acp.ContentBlock, caps acp.PromptCapabilities) []acp.ContentBlock {
	out := slices.Clone(blocks)
	if caps.EmbeddedContext || p.o.BlockText == nil {
		return out
	}
	for i, c := range out {
		if c.Resource != nil && c.Resource.Resource.TextResourceContents != nil {
			if text, err := p.o.BlockText(c); err == nil {
				out[i] = acp.TextBlock(text)
			}
		}
	}
	return out
}

// permission forwards the agent's session/request_permission to the editor, its tool call's title
// escaped (termtext.VisibleLine) as the thread shows it (shown): a person decides on it.
func (p *Proxy) permission(ctx context.Context, req acpclient.PermissionRequest) (acpclient.Decision, error) {
	s := p.byAgentID(req.SessionID)
	if s == nil {
		return acpclient.Decision{Cancelled: true, By: "client"}, nil
	}
	raw := req.Raw
	raw.SessionId = acp.SessionId(s.id)
	if raw.ToolCall.Title != nil {
		// A person decides on it: shown escaped, as the thread shows it (shown).
		raw.ToolCall.Title = acp.Ptr(termtext.VisibleLine(*raw.ToolCall.Title))
	}
	s.mu.Lock()
	deadline := s.deadline
	s.mu.Unlock()
	if deadline != nil { // a person deciding is not the agent's time
		deadline.Pause()
		defer deadline.Resume()
	}
	resp, err := p.o.Editor.Conn().RequestPermission(ctx, raw)
	switch {
	case err != nil && ctx.Err() != nil:
		return acpclient.Decision{Cancelled: true, By: "client"}, nil
	case err != nil:
		return acpclient.Decision{}, fmt.Errorf("asking the editor: %w", err)
	case resp.Outcome.Selected == nil:
		return acpclient.Decision{Cancelled: true, By: "client"}, nil
	}
	id := string(resp.Outcome.Selected.OptionId)
	for _, o := range req.Options {
		if o.ID == id && o.Kind == string(acp.PermissionOptionKindAllowAlways) {
			s.always.Allow(req.Tool)
		}
	}
	return acpclient.Decision{OptionID: id, By: "client"}, nil
}

// access decides a write (fs/write_text_file) or a command (terminal/create) the agent sends
// (acpclient.Options.Access), whoever then serves it: the editor (it advertised fs writes or
// terminals) or qkit (a write to disk for an editor without fs). One rule holds on every door
// (approval.Grants.CoversAccess, as in approval.Policy.Access): the request is forwarded or served
// only when it belongs to a tool call whose permission the editor granted in this turn and that
// still runs (req.Granted), or the editor allowed always, in this session, the tool it stands for
// (trusted as write: a nameless edit, delete or move; as shell: a nameless execute). An agent that
// trusts a tool itself, and so never asks, gets nothing forwarded on that account: the editor
// never saw a permission request for it. Anything else is refused; the agent gets the error,
// the log says so, and the turn goes on. Where the request points (a path, a terminal's cwd) is
// held to the session's folder by proxyFiles and proxyTerminals.
func (p *Proxy) access(_ context.Context, req acpclient.Access) error {
	s := p.byAgentID(req.SessionID)
	var grants *approval.Grants
	if s != nil {
		grants = &s.always
	}
	if grants.CoversAccess(req) {
		return nil
	}
	err := &UnaskedError{Access: req}
	session := req.SessionID
	if s != nil {
		session = s.id
	}
	what := "a write"
	if req.Method == acp.ClientMethodTerminalCreate {
		what = "a command"
	}
	p.o.Logger.Warn("refused "+what+" the agent did not ask the editor's permission for", "session", session, "request", req.String())
	return err
}

// UnaskedError is a write or a command of the agent's that no permission of the editor's
// covered: it was refused, neither forwarded to the editor nor served by qkit.
type UnaskedError struct{ Access acpclient.Access }

func (e *UnaskedError) Error() string {
	return fmt.Sprintf("refused to %s: the agent did not ask the editor's permission for it (%s), and qkit forwards or serves a write or a command only for a tool call the editor allowed",
		e.Access, e.Access.Method)
}

// SetAgentModel sets the agent session's model: through its model config option when it offered
// one, else session/set_model (which kiro handles). An error is the agent's refusal.
func (p *Proxy) SetAgentModel(ctx context.Context, s *Session, model string) error {
	s.mu.Lock()
	agentID, c := s.agentID, s.conn
	choices := acpclient.SessionChoices{ConfigOptions: s.config, Models: s.models, Modes: s.modes}
	s.mu.Unlock()
	if c == nil {
		return errors.New("the agent is not running")
	}
	return c.SetModel(ctx, agentID, model, choices)
}

// setAgentMode gives a new agent session `acp serve --agent` as its mode, for an agent that does
// not take it at launch (another ACP agent than q and kiro-cli); a refusal is the error.
func (p *Proxy) setAgentMode(ctx context.Context, s *Session) error {
	mode := p.o.Agent
	if mode == "" || agent.Describe(p.o.Limits.Command).LaunchFlags() {
		return nil
	}
	s.mu.Lock()
	agentID, c := s.agentID, s.conn
	choices := acpclient.SessionChoices{ConfigOptions: s.config, Models: s.models, Modes: s.modes}
	s.mu.Unlock()
	return c.SetMode(ctx, agentID, mode, choices)
}

// ModeState is the agent's modes of the session, as it last said.
func (s *Session) ModeState() *acp.SessionModeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modes
}

// SetMode passes session/set_mode to the agent.
func (p *Proxy) SetMode(ctx context.Context, s *Session, mode string) error {
	s.mu.Lock()
	agentID, c := s.agentID, s.conn
	s.mu.Unlock()
	if c == nil || p.isDead(c) {
		return &acp.RequestError{Code: -32603, Message: "the agent is not running: send a prompt (or load the session) first"}
	}
	_, err := c.SDK().SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: acp.SessionId(agentID), ModeId: acp.SessionModeId(mode)})
	return err
}

// Models are the agent's models for session id, when it said.
func (p *Proxy) Models(id string) ([]string, string) {
	s := p.Session(id)
	if s == nil {
		return nil, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.models == nil {
		return configModels(s.config)
	}
	var out []string
	for _, m := range s.models.AvailableModels {
		out = append(out, string(m.ModelId))
	}
	return out, string(s.models.CurrentModelId)
}

// configModels are the values of the config option of category model, and its current one.
func configModels(opts []acp.SessionConfigOption) ([]string, string) {
	for _, o := range opts {
		sel := o.Select
		if sel == nil || sel.Category == nil || *sel.Category != acp.SessionConfigOptionCategoryModel {
			continue
		}
		var out []string
		if u := sel.Options.Ungrouped; u != nil {
			for _, v := range *u {
				out = append(out, string(v.Value))
			}
		}
		if g := sel.Options.Grouped; g != nil {
			for _, group := range *g {
				for _, v := range group.Options {
					out = append(out, string(v.Value))
				}
			}
		}
		return out, string(sel.CurrentValue)
	}
	return nil, ""
}

// proxyFiles answers the agent's fs/* requests: through the editor when it advertised them (so
// the agent reads unsaved buffers and the editor shows its own diffs), otherwise from disk. Either
// way only inside the session's folder (symbolic links resolved): a path outside it is refused
// before the editor sees it, as the disk refuses it.
type proxyFiles struct{ p *Proxy }

func (f proxyFiles) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	s := f.p.byAgentID(string(req.SessionId))
	if s == nil {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	if f.p.o.Editor.Caps().Fs.ReadTextFile {
		path, err := f.p.inside(s, "read", req.Path)
		if err != nil {
			return acp.ReadTextFileResponse{}, err
		}
		req.SessionId, req.Path = acp.SessionId(s.id), path
		return f.p.o.Editor.Conn().ReadTextFile(ctx, req)
	}
	return f.disk(s).ReadTextFile(ctx, req)
}

// disk serves files inside the session's folder only (symbolic links resolved).
func (f proxyFiles) disk(s *Session) *acpclient.DirFiles {
	return &acpclient.DirFiles{Root: s.cwd, OnRefused: f.p.refusedOutside(s)}
}

func (f proxyFiles) WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	s := f.p.byAgentID(string(req.SessionId))
	if s == nil {
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	if f.p.o.Editor.Caps().Fs.WriteTextFile {
		path, err := f.p.inside(s, "write", req.Path)
		if err != nil {
			return acp.WriteTextFileResponse{}, err
		}
		req.SessionId, req.Path = acp.SessionId(s.id), path
		return f.p.o.Editor.Conn().WriteTextFile(ctx, req)
	}
	return f.disk(s).WriteTextFile(ctx, req)
}

// refusedOutside logs a path of the agent's refused for lying outside s's folder.
func (p *Proxy) refusedOutside(s *Session) func(*acpclient.OutsideError) {
	return func(e *acpclient.OutsideError) {
		p.o.Logger.Warn("the agent asked for a path outside the session's folder; refused", "session", s.id, "op", e.Op, "path", e.Path)
	}
}

// inside holds a path the agent names in a request for the editor (op: read, write, run a command
// in) to s's folder, as DirFiles and DirTerminals hold the ones qkit serves (acpclient.Within:
// links resolved, a relative path taken in the folder). It returns the path to forward, absolute
// and cleaned; outside, the error the agent gets (the disk's refusal), and stderr says so.
func (p *Proxy) inside(s *Session, op, path string) (string, error) {
	if abs, ok := acpclient.Within(s.cwd, path); ok {
		return abs, nil
	}
	e := &acpclient.OutsideError{Op: op, Path: path, Root: s.cwd}
	p.refusedOutside(s)(e)
	return "", &acp.RequestError{Code: -32602, Message: e.Error(), Data: map[string]any{"details": e.Error()}}
}

// proxyTerminals passes the agent's terminal/* requests to the editor (set only when it
// advertised terminals); access decided the command, and its cwd is held to the session's folder.
type proxyTerminals struct{ p *Proxy }

func (t proxyTerminals) sid(id acp.SessionId) (acp.SessionId, error) {
	s := t.p.byAgentID(string(id))
	if s == nil {
		return "", acp.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	return acp.SessionId(s.id), nil
}

// CreateTerminal forwards the command with a cwd inside the session's folder: the one the agent
// named, or the folder itself when it named none (rather than whatever the editor starts in).
func (t proxyTerminals) CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	s := t.p.byAgentID(string(req.SessionId))
	if s == nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	dir := s.cwd
	if req.Cwd != nil && *req.Cwd != "" {
		var err error
		if dir, err = t.p.inside(s, "run a command in", *req.Cwd); err != nil {
			return acp.CreateTerminalResponse{}, err
		}
	}
	req.SessionId, req.Cwd = acp.SessionId(s.id), &dir
	return t.p.o.Editor.Conn().CreateTerminal(ctx, req)
}

func (t proxyTerminals) TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	id, err := t.sid(req.SessionId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	req.SessionId = id
	return t.p.o.Editor.Conn().TerminalOutput(ctx, req)
}

func (t proxyTerminals) WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	id, err := t.sid(req.SessionId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	req.SessionId = id
	return t.p.o.Editor.Conn().WaitForTerminalExit(ctx, req)
}

func (t proxyTerminals) KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	id, err := t.sid(req.SessionId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	req.SessionId = id
	return t.p.o.Editor.Conn().KillTerminal(ctx, req)
}

func (t proxyTerminals) ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	id, err := t.sid(req.SessionId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	req.SessionId = id
	return t.p.o.Editor.Conn().ReleaseTerminal(ctx, req)
}

// updateLine is one session/update notification line for the editor.
func updateLine(sessionID string, u acp.SessionUpdate) ([]byte, error) {
	b, err := json.Marshal(acp.SessionNotification{SessionId: acp.SessionId(sessionID), Update: u})
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":`), b...), "}\n"...), nil
}
