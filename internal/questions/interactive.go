package questions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/prompt"
)

// Decision is what the person decided in a terminal: answers, or a rejection with an optional reason.
type Decision struct {
	Answers  []Answer
	Rejected bool
	Reason   string
}

// Labels of the extra choices offered with every question.
const (
	choiceOther  = "Other (type your own answer)"
	choiceReject = "Reject this question set…"
	reviewSubmit = "Submit these answers"
	reviewChange = "Change an answer"
	reviewReject = "Reject this question set"
)

// errBack returns the walk to the question it was on (a rejection the person did not confirm).
var errBack = errors.New("back")

// Walk takes the person through a question set with p (ending with prompt.ErrInterrupted as soon as
// ctx ends): each question in turn (single choice,
// multiple choice, or free text through "Other"), then a review where they submit, change an answer
// or reject the set (with an optional reason). w receives the set's heading and the review.
//
// Every text from the set is shown through termtext (see terminal.go), so the prompts show what a
// label really holds; the answers record the stored labels, chosen by their index, never the text
// shown.
func Walk(ctx context.Context, p prompt.Prompter, w io.Writer, sess *Session) (*Decision, error) {
	qs := sess.Set().Questions
	from := "an assistant"
	if sess.Request != nil && sess.Request.Source == "cli" {
		from = "a script"
	}
	fmt.Fprintf(w, "\nQuestion set %s from %s: %d question(s), asked %s ago\n", sess.ShortID(), from, len(qs),
		time.Since(sess.Status.CreatedAt).Round(time.Second))
	answers := make([]Answer, len(qs))
	for i := 0; i < len(qs); i++ {
		a, d, err := askOne(ctx, p, qs, i)
		if errors.Is(err, errBack) {
			i--
			continue
		}
		if err != nil || d != nil {
			return d, err
		}
		answers[i] = a
	}
	for {
		fmt.Fprint(w, "\nYour answers:\n")
		for i, q := range qs {
			fmt.Fprintf(w, "  %d. [%s] %s\n", i+1, termLine(q.Header), summary(answers[i]))
		}
		choice, err := p.Select(ctx, "Submit?", []string{reviewSubmit, reviewChange, reviewReject}, 0)
		if err != nil {
			return nil, err
		}
		switch choice {
		case 0:
			return &Decision{Answers: answers}, nil
		case 1:
			headers := make([]string, len(qs))
			for i, q := range qs {
				headers[i] = fmt.Sprintf("%d. [%s] %s", i+1, termLine(q.Header), termLine(q.Question))
			}
			i, err := p.Select(ctx, "Which question?", headers, 0)
			if err != nil {
				return nil, err
			}
			a, d, err := askOne(ctx, p, qs, i)
			if errors.Is(err, errBack) {
				continue
			}
			if err != nil || d != nil {
				return d, err
			}
			answers[i] = a
		default:
			d, err := reject(ctx, p)
			if errors.Is(err, errBack) {
				continue
			}
			return d, err
		}
	}
}

func summary(a Answer) string {
	parts := make([]string, 0, len(a.Selected)+1)
	for _, l := range a.Selected {
		parts = append(parts, termLine(l))
	}
	if a.Other != "" {
		parts = append(parts, termLine(fmt.Sprintf("Other: %q", a.Other)))
	}
	if len(parts) == 0 {
		return "(no selection)"
	}
	return strings.Join(parts, ", ")
}

// askOne asks question i. It returns a Decision instead of an answer when the person rejects the
// set, and errBack when they start a rejection and then change their mind.
func askOne(ctx context.Context, p prompt.Prompter, qs []Question, i int) (Answer, *Decision, error) {
	q := qs[i]
	a := Answer{QuestionIndex: i, Selected: []string{}}
	msg := fmt.Sprintf("[%d/%d %s] %s", i+1, len(qs), termLine(q.Header), term(q.Question))
	opts := make([]string, len(q.Options))
	for j, o := range q.Options {
		opts[j] = optionText(o)
	}
	other := false
	if q.MultiSelect {
		picked, err := p.MultiSelect(ctx, msg+" (space to select, enter when done)", append(opts, choiceOther))
		if err != nil {
			return a, nil, err
		}
		for _, j := range picked {
			if j == len(q.Options) {
				other = true
			} else if j >= 0 && j < len(q.Options) {
				a.Selected = append(a.Selected, q.Options[j].Label)
			}
		}
	} else {
		j, err := p.Select(ctx, msg, append(opts, choiceOther, choiceReject), 0)
		if err != nil {
			return a, nil, err
		}
		switch {
		case j == len(q.Options):
			other = true
		case j == len(q.Options)+1:
			d, err := reject(ctx, p)
			return a, d, err
		case j >= 0 && j < len(q.Options):
			a.Selected = append(a.Selected, q.Options[j].Label)
		}
	}
	for other {
		text, err := p.Input(ctx, "Your answer to "+termLine(q.Header)+":", "")
		if err != nil {
			return a, nil, err
		}
		if a.Other = strings.TrimSpace(text); a.Other != "" || q.MultiSelect && len(a.Selected) > 0 {
			break
		}
	}
	return a, nil, nil
}

func reject(ctx context.Context, p prompt.Prompter) (*Decision, error) {
	ok, err := p.Confirm(ctx, "Reject this question set? The assistant is told you declined", false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errBack
	}
	reason, err := p.Input(ctx, "Why? (optional, helps the assistant; enter to skip)", "")
	if err != nil {
		return nil, err
	}
	return &Decision{Rejected: true, Reason: strings.TrimSpace(reason)}, nil
}
