package approval

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/prompt"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// The labels a person chooses from, in the questions store and at the terminal.
const (
	LabelAllowOnce   = "Allow once"
	LabelAllowAlways = "Allow always (this run)"
	LabelReject      = "Reject"
)

// Question is the question set that puts req to a person: one question, three options.
func Question(req acpclient.PermissionRequest) *questions.QuestionSet {
	var q strings.Builder
	fmt.Fprintf(&q, "The agent asks to run %s.", label(req.Tool))
	for _, l := range req.Tool.Locations {
		fmt.Fprintf(&q, "\nFile: %s", l.Path)
	}
	for _, d := range req.Tool.Diffs {
		fmt.Fprintf(&q, "\nChanges %s (%d bytes of new text)", d.Path, len(d.NewText))
	}
	if len(req.Tool.Input) > 0 && len(req.Tool.Input) < 500 {
		fmt.Fprintf(&q, "\nInput: %s", req.Tool.Input)
	}
	text := q.String()
	if len([]rune(text)) > questions.MaxQuestionLen {
		text = string([]rune(text)[:questions.MaxQuestionLen-1]) + "…"
	}
	return &questions.QuestionSet{Questions: []questions.Question{{
		Question: text,
		Header:   "Permission",
		Options: []questions.Option{
			{Label: LabelAllowOnce, Description: "run it this time"},
			{Label: LabelAllowAlways, Description: "run it, and tools like it, without asking again in this run"},
			{Label: LabelReject, Description: "refuse it; the agent is told and carries on"},
		},
	}}}
}

// answerOf reads a person's choice; free text ("Other") starting with allow/yes counts as allow
// once, anything else as a rejection.
func answerOf(selected []string, other string) string {
	for _, s := range selected {
		switch s {
		case LabelAllowOnce:
			return AllowOnce
		case LabelAllowAlways:
			return AllowAlways
		case LabelReject:
			return Reject
		}
	}
	o := strings.ToLower(strings.TrimSpace(other))
	if strings.HasPrefix(o, "allow") || strings.HasPrefix(o, "yes") {
		return AllowOnce
	}
	return Reject
}

// StoreAsker asks through the questions store, so `qkit questions wait`/`answer`, the web page or
// any questions client answers. Rejecting the question set rejects the tool.
type StoreAsker struct {
	Store   questions.Store
	Timeout time.Duration // questions.timeout; 0 waits until answered
	// Created is told the question set's id once it waits (to say how to answer it).
	Created func(id string)
}

// AskPermission creates the question set and waits for its answer.
func (s *StoreAsker) AskPermission(ctx context.Context, req acpclient.PermissionRequest) (string, error) {
	res, _, err := s.Store.Ask(ctx, Question(req), questions.AskOptions{
		Source:       "ask",
		Timeout:      s.Timeout,
		CancelReason: "the qkit ask run ended before the permission was decided",
		Created: func(sess *questions.Session) {
			if s.Created != nil {
				s.Created(sess.ID)
			}
		},
	})
	if err != nil {
		return "", fmt.Errorf("asking for permission to run %s: %w", label(req.Tool), err)
	}
	if res.Status == questions.Rejected || len(res.Answers) == 0 {
		return Reject, nil
	}
	return answerOf(res.Answers[0].Selected, res.Answers[0].Other), nil
}

// TerminalAsker asks the person at the terminal, one request at a time.
type TerminalAsker struct {
	Prompter prompt.Prompter
	Out      io.Writer // where the request is described (stderr)

	mu sync.Mutex
}

// AskPermission describes the request and offers the three answers.
func (t *TerminalAsker) AskPermission(ctx context.Context, req acpclient.PermissionRequest) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	q := Question(req).Questions[0]
	fmt.Fprintf(t.Out, "\n%s\n", termtext.Visible(q.Question)) // the agent wrote the title, paths and input
	i, err := t.Prompter.Select(ctx, "Allow it?", []string{LabelAllowOnce, LabelAllowAlways, LabelReject}, 0)
	if err != nil {
		return "", err
	}
	return []string{AllowOnce, AllowAlways, Reject}[i], nil
}
