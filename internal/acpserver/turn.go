package acpserver

import (
	"context"
	"strings"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// agentTurns runs the prompts that go to the agent (every prompt but qkit's own slash commands).
// acp serve has two: the text path (textTurns: `<agent> chat --no-interactive`, with the
// session's earlier turns pasted in front of each prompt) and the proxy path (the session maps
// onto a session of `<agent> acp`). The session actor, the store, slash commands and the stream to
// the editor are the same for both.
type agentTurns interface {
	// prompt runs one turn of the session in, streaming to out. It returns how the turn ended and
	// the tools the user allowed for the rest of the session.
	prompt(ctx context.Context, in turnInput, p userPrompt, out *reply) (turnResult, []string)
}

// turnInput is the session state a turn starts from: a copy, so the worker shares nothing.
type turnInput struct {
	backend   string // the session's (sessions.BackendText or BackendACP)
	turn      uint64 // the turn's id, unique within the connection
	sessionID string
	cwd       string
	model     string
	trusted   []string
}

// runTurn runs one prompt, streams the reply, and stores the turn. It returns how the turn ended
// and the tools the user allowed for the rest of the session.
func (a *adapter) runTurn(ctx context.Context, in turnInput, prompt userPrompt) (turnResult, []string) {
	out := &reply{a: a, sessionID: in.sessionID, rank: in.turn, limit: a.opts.Limits.MaxResponseSize}
	say := out.say
	var always []string
	var res turnResult
	if line, ok := a.slashCommand(prompt.text); ok {
		res = a.runCommand(ctx, in, line, say)
		res.ended = string(res.stop) // qkit's own reply (kept: it is what the command said)
	} else {
		res, always = a.turnsFor(in).prompt(ctx, in, prompt, out)
	}
	// The turn is stored even when cancelled: the client has shown what was streamed, and a
	// reload should show the same. WithoutCancel: a cancelled turn must still be written.
	t := sessions.Turn{Prompt: prompt.text, Blocks: prompt.blocks, Reply: out.text(), Tools: res.tools, Usage: res.usage,
		Ended: res.ended, Truncated: res.truncated}
	if err := a.opts.Store.AppendTurn(context.WithoutCancel(ctx), in.sessionID, t, a.opts.Now()); err != nil {
		a.opts.Logger.Error("cannot store the turn", "session", in.sessionID, "err", err)
	}
	return res, always
}

// turnsFor is the path session in's prompts take.
func (a *adapter) turnsFor(in turnInput) agentTurns {
	if in.backend == sessions.BackendACP && a.proxy != nil && a.proxy.Available(a.ctx) {
		return proxyTurns{a}
	}
	return a.backend
}

// sendLines writes notification lines qkit encoded itself (appendChunk). Like the SDK's
// SessionUpdate it sends nothing once the connection has ended: the client may have stopped
// reading.
func (a *adapter) sendLines(rank uint64, b []byte) error {
	if err := a.ctx.Err(); err != nil {
		return err
	}
	return a.pipe.WriteRank(rank, b)
}

// update sends a session/update on the connection's context, not the request's: updates sent
// while a turn winds down after session/cancel must still go out (the SDK refuses to send on a
// cancelled context).
func (a *adapter) update(sessionID string, u acp.SessionUpdate) {
	if err := a.conn.SessionUpdate(a.ctx, acp.SessionNotification{SessionId: acp.SessionId(sessionID), Update: u}); err != nil {
		a.opts.Logger.Debug("session/update not sent", "session", sessionID, "err", err)
	}
}

// reply is one turn's answer: what goes to the client as agent_message_chunk, and what the
// transcript keeps. q's stream is sent as it comes, up to the runner's output cap (each run's
// output.Live, as on every front end), and is recorded from the runner's result; nothing holds a
// second copy, so memory stays flat whatever q prints.
type reply struct {
	a         *adapter
	sessionID string
	rank      uint64   // the turn's id: older turns' chunks go out first (outLock)
	limit     int64    // Limits.MaxResponseSize; 0: no cap
	parts     []string // the transcript's text, in order: the runs' kept output is not copied
	line      []byte   // the encoding buffer, reused for every chunk
}

// say sends text and records it: a slash command's answer, which is the turn's reply.
func (r *reply) say(text string) {
	if text == "" {
		return
	}
	r.parts = append(r.parts, text)
	r.send(text)
}

// notice sends qkit's own text about the agent's turn (a truncation, a timeout, a refusal, a
// failure) without recording it: the transcript says how the turn ended as data instead.
func (r *reply) notice(text string) {
	if text != "" {
		r.send(text)
	}
}

// send sends text to the editor as an agent_message_chunk.
func (r *reply) send(text string) {
	r.line = appendTextChunk(r.line[:0], r.sessionID, kindAgentChunk, text)
	if err := r.a.sendLines(r.rank, r.line); err != nil {
		r.a.opts.Logger.Debug("session/update not sent", "session", r.sessionID, "err", err)
	}
}

// record adds the kept output of a run to the transcript.
func (r *reply) record(body string) {
	if body != "" {
		r.parts = append(r.parts, body)
	}
}

// text is the whole reply, as the transcript keeps it.
func (r *reply) text() string { return strings.Join(r.parts, "") }

// utf8Chunks passes stream chunks on as strings, holding back a multi-byte character split
// across two chunks so no chunk carries half of one.
type utf8Chunks struct {
	pending []byte
	emit    func(string)
}

func (u *utf8Chunks) write(b []byte) {
	u.pending = append(u.pending, b...)
	cut := len(u.pending)
	// Back up over at most 3 bytes of an unfinished sequence at the end.
	for i := 1; i <= 3 && i <= len(u.pending); i++ {
		c := u.pending[len(u.pending)-i]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(u.pending[len(u.pending)-i:]) {
				cut = len(u.pending) - i
			}
			break
		}
	}
	if cut > 0 {
		u.emit(string(u.pending[:cut]))
		u.pending = append(u.pending[:0], u.pending[cut:]...)
	}
}

func (u *utf8Chunks) flush() {
	if len(u.pending) > 0 {
		u.emit(string(u.pending))
		u.pending = nil
	}
}
