package acpserver

import (
	"context"
	"slices"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// sessionHandle is how others reach a session actor: its inbox, and done, closed when it ends.
type sessionHandle struct {
	id    string
	inbox chan sessionMsg
	done  chan struct{}
}

// ended reports whether the actor has finished (closed; its table entry may not be gone yet).
func (h *sessionHandle) ended() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// send queues msg without blocking; false means the inbox is full.
func (h *sessionHandle) send(msg sessionMsg) bool {
	select {
	case h.inbox <- msg:
		return true
	default:
		return false
	}
}

// sessionMsg is what a session actor receives.
type sessionMsg interface{ sessionMsg() }

type (
	// msgPrompt starts t, or queues it behind the running turn after cancelling that one.
	msgPrompt struct{ t *turn }
	// msgCancel cancels turn id, or every turn when id is 0 (session/cancel).
	msgCancel struct{ id uint64 }
	// msgTurnDone is sent by the worker when a turn has ended and been stored.
	msgTurnDone struct {
		t      *turn
		res    turnResult
		always []string // tools allowed for the rest of the session during the turn
	}
	// msgSetModel changes the session's model; the reply carries the new config options.
	msgSetModel struct {
		model string
		reply chan setModelReply
	}
	// msgConfig asks for the session's config options.
	msgConfig struct {
		reply chan []acp.SessionConfigOption
	}
	// msgClose cancels everything and ends the actor once the running turn has finished.
	msgClose struct{ reply chan struct{} }
)

func (msgPrompt) sessionMsg()   {}
func (msgCancel) sessionMsg()   {}
func (msgTurnDone) sessionMsg() {}
func (msgSetModel) sessionMsg() {}
func (msgConfig) sessionMsg()   {}
func (msgClose) sessionMsg()    {}

type setModelReply struct {
	options []acp.SessionConfigOption
	err     error
}

// turn is one session/prompt.
type turn struct {
	id     uint64
	prompt userPrompt
	reply  chan turnResult // buffered: the actor never blocks on it
	cancel context.CancelFunc
}

// turnResult is how a turn ended.
type turnResult struct {
	stop acp.StopReason
	err  error
	// tools and usage are the turn's tool calls and cost, for the transcript (nil: none known).
	tools []sessions.ToolCall
	usage *sessions.Usage
	// ended and truncated are how the turn ended, for the transcript (sessionrec.Ending).
	ended     string
	truncated bool
}

// sessionActor owns one session's state. Only its goroutine touches these fields.
type sessionActor struct {
	h       *sessionHandle
	a       *adapter
	rec     sessions.SessionRecord
	running *turn
	queue   []*turn
	closing []chan struct{}
}

// startSession starts the actor for rec; it ends on close or when the connection ends.
func (a *adapter) startSession(rec sessions.SessionRecord) *sessionHandle {
	h := &sessionHandle{id: rec.ID, inbox: make(chan sessionMsg, inboxSize), done: make(chan struct{})}
	s := &sessionActor{h: h, a: a, rec: rec}
	go s.loop()
	return h
}

func (s *sessionActor) loop() {
	defer close(s.h.done)
	for {
		select {
		case msg := <-s.h.inbox:
			s.handle(msg)
		case <-s.a.ctx.Done():
			s.cancelAll()
			if s.running != nil {
				s.drainUntilIdle()
			}
			return
		}
		if len(s.closing) > 0 && s.running == nil {
			for _, c := range s.closing {
				c <- struct{}{}
			}
			return
		}
	}
}

// drainUntilIdle waits for the running turn's worker to finish (after the connection ended).
func (s *sessionActor) drainUntilIdle() {
	for s.running != nil {
		if msg, ok := (<-s.h.inbox).(msgTurnDone); ok {
			s.handle(msg)
		}
	}
}

func (s *sessionActor) handle(msg sessionMsg) {
	switch m := msg.(type) {
	case msgPrompt:
		if len(s.closing) > 0 {
			m.t.reply <- turnResult{stop: acp.StopReasonCancelled}
			return
		}
		if s.running == nil {
			s.start(m.t)
			return
		}
		// A second prompt while one runs cancels the first (the SDK has already cancelled the
		// first request's context by now), and runs once it has wound down. See the README.
		s.cancelAll()
		s.queue = append(s.queue, m.t)
	case msgCancel:
		if m.id == 0 {
			s.cancelAll()
			return
		}
		if s.running != nil && s.running.id == m.id {
			s.running.cancel()
			return
		}
		s.queue = slices.DeleteFunc(s.queue, func(t *turn) bool {
			if t.id == m.id {
				t.reply <- turnResult{stop: acp.StopReasonCancelled}
				return true
			}
			return false
		})
	case msgTurnDone:
		changed := false
		for _, tool := range m.always {
			if !slices.Contains(s.rec.TrustedTools, tool) {
				s.rec.TrustedTools = append(s.rec.TrustedTools, tool)
				changed = true
			}
		}
		if changed {
			if err := s.a.opts.Store.SetTrustedTools(context.WithoutCancel(s.a.ctx), s.rec.ID, s.rec.TrustedTools, s.a.opts.Now()); err != nil {
				s.a.opts.Logger.Warn("cannot record trusted tools", "session", s.rec.ID, "err", err)
			}
		}
		m.t.reply <- m.res
		s.running = nil
		if len(s.queue) > 0 && len(s.closing) == 0 {
			next := s.queue[0]
			s.queue = s.queue[1:]
			s.start(next)
		}
	case msgSetModel:
		// On the proxy path the agent is asked first: a model it refuses is the answer's error,
		// and the session keeps the model it had.
		if s.rec.Backend == sessions.BackendACP && s.a.proxy != nil && m.model != "" {
			if ps := s.a.proxy.Session(s.rec.ID); ps != nil {
				if err := s.a.proxy.SetAgentModel(s.a.ctx, ps, m.model); err != nil {
					s.a.opts.Logger.Info("the agent did not take the model", "session", s.rec.ID, "model", m.model, "err", err)
					m.reply <- setModelReply{err: &agentRefusal{err}}
					return
				}
			}
		}
		if err := s.a.opts.Store.SetModel(s.a.ctx, s.rec.ID, m.model, s.a.opts.Now()); err != nil {
			m.reply <- setModelReply{err: err}
			return
		}
		s.rec.Model = m.model
		m.reply <- setModelReply{options: s.a.configOptions(s.rec)}
	case msgConfig:
		m.reply <- s.a.configOptions(s.rec)
	case msgClose:
		s.cancelAll()
		s.closing = append(s.closing, m.reply)
	}
}

// cancelAll cancels the running turn and answers every queued one cancelled.
func (s *sessionActor) cancelAll() {
	if s.running != nil {
		s.running.cancel()
	}
	for _, t := range s.queue {
		t.reply <- turnResult{stop: acp.StopReasonCancelled}
	}
	s.queue = nil
}

// start runs t in a worker goroutine; the worker reports back with msgTurnDone. The inbox may be
// full of other messages at that moment, so the worker blocks until the actor has room: the actor
// never waits on the worker, so this cannot deadlock.
func (s *sessionActor) start(t *turn) {
	ctx, cancel := context.WithCancel(s.a.ctx)
	t.cancel = cancel
	s.running = t
	in := turnInput{
		backend:   s.rec.Backend,
		turn:      t.id,
		sessionID: s.rec.ID,
		cwd:       s.rec.Cwd,
		model:     s.rec.Model,
		trusted:   slices.Clone(s.rec.TrustedTools),
	}
	go func() {
		res, always := s.a.runTurn(ctx, in, t.prompt)
		cancel()
		s.h.inbox <- msgTurnDone{t: t, res: res, always: always}
	}()
}
