package questionsweb

import (
	"embed"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

//go:embed assets
var assets embed.FS

// pages is parsed on first use, not at start-up: every qkit command links this package.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/*.html"))
})

type pageView struct {
	Sets []setView
	// Notice, on a page given back after a refusal, points to the set it concerns.
	Notice *noticeView
}

// Waiting says whether any set shown can still be answered.
func (p pageView) Waiting() bool {
	return slices.ContainsFunc(p.Sets, func(v setView) bool { return v.Kept == nil })
}

type messageView struct {
	OK      bool
	Message string
}

// setView is one set as the page shows it.
type setView struct {
	ID, Short, Status, Source, Age, Note string
	// Form is the value the page's forms carry to show they come from it (the csrf field): the
	// session's own, never the token, for a browser.
	Form string
	// Version changes whenever what the page shows of the set changes.
	Version   string
	Questions []questionView
	// MaxReason is the reason's maxlength: browserMax of the core's limit (questions.MaxReasonLen).
	MaxReason int

	// On a page given back after a refusal (see refuse), the set the refusal concerns carries the
	// message (Msg) and what was posted: in its forms when it is still open (Filled; the reason,
	// and Rejecting to unfold that part, when a rejection was refused), else as Kept, to copy.
	Msg               string
	Filled, Rejecting bool
	Reason            string
	Kept              *keptText
}

type questionView struct {
	Name, Header, Question string
	Multi                  bool
	Options                []optionView
	// MaxOther is the free text's maxlength: browserMax of the core's limit
	// (questions.MaxOtherTextLen).
	MaxOther int
	// Other is the free text posted, on a page given back after a refusal.
	Other string
}

// browserMax is the maxlength attribute that lets a person type n characters, the core's limit,
// whatever characters they are. A browser counts maxlength in UTF-16 code units, two for a
// character outside the Basic Multilingual Plane (an emoji, a rarer CJK character), where the core
// counts characters (code points): at n the browser would stop a person typing emoji at n/2. At 2n
// it never stops text the core accepts; text over the core's limit that it lets through (up to 2n
// ordinary characters) is refused by the core with the message every door gives, and the page's
// script keeps what was typed for the person to shorten.
func browserMax(n int) int { return 2 * n }

// optionView is one option. Label is the stored label, which the form posts back (value=) so the
// answer matches it; Shown is the label as the page shows it. Checked, on a page given back after a
// refusal, says the person had chosen it.
type optionView struct {
	Name, Type, Label, Shown, Description string
	Checked                               bool
}

func (s *Server) view(sess *questions.Session, form string) setView {
	v := setView{
		ID: sess.ID, Short: sess.ShortID(), Status: string(sess.Status.Status), Form: form,
		Source: questions.ShownLine(sess.Source()), Age: sess.Age(s.now()),
		Version:   string(sess.Status.Status) + "@" + sess.Status.UpdatedAt.Format(time.RFC3339Nano),
		MaxReason: browserMax(questions.MaxReasonLen),
	}
	switch sess.Status.Status {
	case questions.Detached:
		v.Note = "the assistant's call has ended; your answer waits for it to ask again"
	case questions.InProgress:
		v.Note = "being answered in a terminal"
	}
	// What the set says is shown as `qkit questions show` shows it: a bidirectional override or a
	// control character is written as an escape, not obeyed (html/template only escapes markup).
	for i, q := range sess.Set().Questions {
		name := "q" + strconv.Itoa(i)
		kind := "radio"
		if q.MultiSelect {
			kind = "checkbox"
		}
		qv := questionView{Name: name, Header: questions.ShownLine(q.Header), Question: questions.ShownText(q.Question),
			Multi: q.MultiSelect, MaxOther: browserMax(questions.MaxOtherTextLen)}
		for _, o := range q.Options {
			qv.Options = append(qv.Options, optionView{Name: name, Type: kind, Label: o.Label,
				Shown: questions.ShownLine(o.Label), Description: questions.ShownLine(o.Description)})
		}
		v.Questions = append(v.Questions, qv)
	}
	return v
}

// asset serves one embedded file; it holds no secret, so it needs no token.
func asset(name, ctype string) http.HandlerFunc {
	data, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(data)
	}
}
