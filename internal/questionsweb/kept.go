package questionsweb

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/qkit-cli/qkit/internal/questions"
)

// refuse answers an answer or a rejection that recorded nothing, once the request has shown it may
// change the set (its session and form value are checked). The page's script (Accept:
// application/json) gets the message as reply gives it, and keeps what was typed itself. A form
// posted without the script gets the page again, with the same status: the set's forms filled with
// what was posted and the message at the set, or, when the set has closed or gone (state is then
// the status it is in now), the message and the person's text to copy. A refusal so loses nothing a
// person typed, whichever browser they use. sess is the set as the request found it, nil when it
// could not be read.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, sess *questions.Session, code int, msg, state string) {
	if wantsJSON(r) {
		s.replyEnded(w, r, code, msg, state)
		return
	}
	forms, _ := s.access(r)
	if len(forms) == 0 {
		s.replyEnded(w, r, code, msg, state)
		return
	}
	id := r.PathValue("id")
	sets, err := s.openSets()
	if err != nil {
		// The other sets cannot be shown; the one the person answered still can.
		s.log.Warn("the question sets cannot be read", "error", err)
	}
	views := make([]setView, 0, len(sets)+1)
	at := -1
	for _, o := range sets {
		if o.ID == id {
			at = len(views)
			sess = o // as it is now: its status and note are current
		}
		views = append(views, s.view(o, forms[0]))
	}
	var v setView
	switch {
	case state == "" && at >= 0:
		v = views[at]
		fill(&v, r.PostForm, msg)
	case state == "" && sess != nil && sess.Status.Status.Open() && sess.Request != nil:
		v = s.view(sess, forms[0])
		fill(&v, r.PostForm, msg)
	default:
		v = s.kept(sess, id, state, r.PostForm, msg)
	}
	if at >= 0 {
		views[at] = v
	} else {
		views = append([]setView{v}, views...)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	page := pageView{Sets: views, Notice: &noticeView{ID: v.ID, Short: v.Short, Closed: v.Kept != nil}}
	if err := pages().ExecuteTemplate(w, "page", page); err != nil {
		s.log.Warn("rendering the page failed", "error", err)
	}
}

// fill puts what was posted back into an open set's forms: the chosen options checked, the free
// texts and the reason in their fields, the rejection's part unfolded when it was the rejection
// that was refused, and msg at the set. Labels the set does not offer are not shown: no browser
// posts them from this page.
func fill(v *setView, form url.Values, msg string) {
	for i := range v.Questions {
		q := &v.Questions[i]
		for j := range q.Options {
			q.Options[j].Checked = slices.Contains(form[q.Name], q.Options[j].Label)
		}
		q.Other = typed(form.Get(q.Name + "_other"))
	}
	_, v.Rejecting = form["reason"]
	v.Reason = typed(form.Get("reason"))
	v.Msg = msg
	v.Filled = true
}

// kept shows a set that can no longer be answered (closed, or gone) with the message and what
// the person posted to it: the options chosen, as the page shows the set's text, and their own
// words (free text, reason) in read-only fields they can copy.
func (s *Server) kept(sess *questions.Session, id, state string, form url.Values, msg string) setView {
	v := setView{ID: id, Short: id[:8], Status: state}
	var qs []questions.Question
	if sess != nil {
		v = s.view(sess, "")
		v.Questions = nil
		qs = sess.Set().Questions
		if state != "" {
			v.Status = state
		}
	}
	if v.Status == "" {
		v.Status = "closed"
	}
	k := &keptText{Reason: typed(form.Get("reason"))}
	for i := range questions.MaxQuestions {
		name := "q" + strconv.Itoa(i)
		a := keptAnswer{Other: typed(form.Get(name + "_other"))}
		for _, l := range form[name] {
			a.Chosen = append(a.Chosen, questions.ShownLine(typed(l)))
		}
		if a.Other == "" && len(a.Chosen) == 0 {
			continue
		}
		a.Question = "Question " + strconv.Itoa(i+1)
		if i < len(qs) {
			a.Question += " (" + questions.ShownLine(qs[i].Header) + "): " + questions.ShownLine(qs[i].Question)
		}
		k.Answers = append(k.Answers, a)
	}
	v.Kept = k
	v.Msg = msg
	return v
}

// typed is a person's text as the page gives it back: as posted, escaped by the template, with
// bytes that are not UTF-8 (which the core refuses) shown as U+FFFD so the page stays UTF-8.
func typed(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// noticeView heads a page given back after a refusal: it points to the set whose answer was not
// recorded.
type noticeView struct {
	ID, Short string
	Closed    bool
}

// keptText is what a person posted to a set that can no longer take it.
type keptText struct {
	Answers []keptAnswer
	Reason  string
}

type keptAnswer struct {
	Question string
	Chosen   []string
	Other    string
}
