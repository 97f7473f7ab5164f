package questions

import (
	"fmt"
	"strconv"
	"strings"
)

// Result is what the assistant gets back: the structured answers (the tool's structuredContent and
// `qkit questions ask --json`) and the text rendering of them. Every key is always present.
type Result struct {
	SessionID       string             `json:"sessionId"`
	CallID          string             `json:"callId"`
	Status          State              `json:"status"`
	Answers         []AnsweredQuestion `json:"answers"`
	RejectionReason string             `json:"rejectionReason"`

	questions []Question // for the option descriptions in Text
}

// AnsweredQuestion is one question with the person's answer.
type AnsweredQuestion struct {
	QuestionIndex int      `json:"questionIndex"`
	Header        string   `json:"header"`
	Question      string   `json:"question"`
	Selected      []string `json:"selected"`
	Other         string   `json:"other"`
}

// ResultOf builds the result of an answered or rejected session.
func ResultOf(sess *Session) *Result {
	r := &Result{SessionID: sess.ID, CallID: sess.Status.CallID, Status: sess.Status.Status, Answers: []AnsweredQuestion{}}
	if sess.Status.Status == Rejected {
		r.RejectionReason = sess.Status.RejectionReason
		return r
	}
	qs := sess.Set().Questions
	r.questions = qs
	for i, q := range qs {
		aq := AnsweredQuestion{QuestionIndex: i, Header: q.Header, Question: q.Question, Selected: []string{}}
		if sess.Answers != nil {
			for _, a := range sess.Answers.Answers {
				if a.QuestionIndex == i {
					aq.Selected = append(aq.Selected, a.Selected...)
					aq.Other = a.Other
				}
			}
		}
		r.Answers = append(r.Answers, aq)
	}
	return r
}

// Text renders the result for the assistant. Answers:
//
//	Here are the user's answers:
//
//	1. [Language] Which language should we use?
//	→ Go — static binary
//	→ Other: "also some Rust"
//
// A rejection reads "User rejected this question set." followed by the reason, or by
// "No reason provided.".
func (r *Result) Text() string {
	if r.Status == Rejected {
		if r.RejectionReason == "" {
			return "User rejected this question set.\n\nNo reason provided."
		}
		return "User rejected this question set.\n\nRejection reason: " + strconv.Quote(r.RejectionReason)
	}
	var b strings.Builder
	b.WriteString("Here are the user's answers:")
	for _, a := range r.Answers {
		fmt.Fprintf(&b, "\n\n%d. [%s] %s", a.QuestionIndex+1, a.Header, a.Question)
		for _, l := range a.Selected {
			b.WriteString("\n→ " + l)
			if d := r.description(a, l); d != "" {
				b.WriteString(" — " + d)
			}
		}
		if a.Other != "" {
			b.WriteString("\n→ Other: " + strconv.Quote(a.Other))
		}
		if len(a.Selected) == 0 && a.Other == "" {
			b.WriteString("\n→ (no selection)")
		}
	}
	return b.String()
}

func (r *Result) description(a AnsweredQuestion, label string) string {
	if a.QuestionIndex >= len(r.questions) {
		return ""
	}
	for _, o := range r.questions[a.QuestionIndex].Options {
		if o.Label == label {
			return o.Description
		}
	}
	return ""
}
