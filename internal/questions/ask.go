package questions

import (
	"fmt"
	"log/slog"
	"time"
)

// AskOptions configure one Ask: who asks, how long to wait, and what to report while waiting.
type AskOptions struct {
	Source string // "mcp" or "cli"
	// CallID identifies the call; empty: a new UUID. Every call gets its own session regardless.
	CallID string
	// Timeout is questions.timeout; 0 waits until answered or cancelled.
	Timeout time.Duration
	// Retention is questions.retention: finished sessions older than this are removed, in the
	// background, on every Ask. 0 skips the cleanup.
	Retention time.Duration
	// Created is called once the session exists (to tell the person how to answer it).
	Created func(*Session)
	// Progress is called every ProgressEvery while waiting.
	Progress      func(elapsed time.Duration, sess *Session)
	ProgressEvery time.Duration
	// CancelReason is recorded on the session when ctx is cancelled.
	CancelReason string
	// Detachable sets outlive the call: a cancelled call leaves the set detached (still answerable),
	// and a repeated call with the same questions takes over such a set, or collects its outcome,
	// instead of asking anew.
	Detachable bool
	// Resume waits on this existing set (taken over with Attach) instead of asking: the call that
	// comes back from the client's form with the set in its request state.
	Resume string
	Logger *slog.Logger
}

// Prepare is the first half of Ask, for a caller that puts the set to the person some other way
// before it waits (the MCP tool's multi-round-trip form): it resumes opts.Resume, takes over a
// detached set with the same questions, or creates a new one. A set it returns may already be
// answered or rejected (an outcome collected from a detached set).
func Prepare(s Store, set *QuestionSet, opts AskOptions) (*Session, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return prepare(s, set, opts, log)
}

func prepare(s Store, set *QuestionSet, opts AskOptions, log *slog.Logger) (*Session, error) {
	if opts.Resume != "" {
		cur, err := s.Get(opts.Resume)
		if err != nil {
			return nil, err
		}
		if !SameQuestions(cur.Set().Questions, set.Questions) {
			return nil, fmt.Errorf("question set %s asks other questions than this call", opts.Resume)
		}
		return s.Attach(opts.Resume, opts.Timeout)
	}
	if sess := takeOver(s, set, opts, log); sess != nil {
		return sess, nil
	}
	sess, err := s.Create(set, CreateOptions{Source: opts.Source, CallID: opts.CallID, Timeout: opts.Timeout, Detachable: opts.Detachable})
	if err != nil {
		return nil, err
	}
	log.Info("question set pending", "sessionId", sess.ID, "callId", sess.Status.CallID, "questions", len(set.Questions))
	return sess, nil
}

// takeOver finds a detached set with the same questions and hands it to this call (see Attach), or
// returns nil.
func takeOver(s Store, set *QuestionSet, opts AskOptions, log *slog.Logger) *Session {
	if !opts.Detachable {
		return nil
	}
	found, err := FindDetached(s, set, opts.Source)
	if err != nil {
		log.Warn("looking for a detached question set failed", "error", err)
		return nil
	}
	if found == nil {
		return nil
	}
	sess, err := s.Attach(found.ID, opts.Timeout)
	if err != nil {
		return nil // taken by another call meanwhile, or it ended: ask anew
	}
	log.Info("repeated call takes over the detached question set", "sessionId", sess.ID, "callId", sess.Status.CallID, "status", sess.Status.Status)
	return sess
}
