package questionsweb

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/questions"
)

// maxForm caps a posted form at the largest one the core's limits allow, so the page refuses no
// answer or reason that `qkit questions answer/reject` and the MCP tool accept: every question with
// every option chosen (labels as long as allowed) and free text as long as allowed, or the longest
// reason, with each character taking the most room it can URL-encoded (every byte of a 4-byte UTF-8
// character as %XX), plus room for the field names, the csrf token and the separators. It derives
// from the core's limits, so it follows them when they change.
const maxForm = maxEncodedChar*(questions.MaxQuestions*(questions.MaxOptions*questions.MaxLabelLen+questions.MaxOtherTextLen)+
	questions.MaxReasonLen) + 16<<10

// maxEncodedChar is the most bytes one character takes in a URL-encoded form.
const maxEncodedChar = 3 * utf8.UTFMax

// change checks what every state-changing request needs (the session cookie or bearer token, and
// its form value in the form or header) and returns the set it names.
func (s *Server) change(w http.ResponseWriter, r *http.Request) (*questions.Session, bool) {
	forms, ok := s.access(r)
	if !ok {
		s.reply(w, r, http.StatusUnauthorized, noToken)
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.reply(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return nil, false
	}
	// Text that is not UTF-8 (free text, a reason) is refused by the core's own checks, with the
	// message every other door gives; a field name that is not UTF-8 names no field of the form.
	tok := r.PostForm.Get("csrf")
	if tok == "" {
		tok = r.Header.Get("X-Qkit-Token")
	}
	if !slices.ContainsFunc(forms, func(f string) bool { return equal(tok, f) }) {
		s.reply(w, r, http.StatusForbidden, "Refused: the form does not carry this page's token. Reload the page and answer again.")
		return nil, false
	}
	id := r.PathValue("id")
	if !questions.ValidID(id) {
		s.reply(w, r, http.StatusNotFound, fmt.Sprintf("No question set %q.", id))
		return nil, false
	}
	sess, err := s.st.Get(id)
	if err != nil {
		s.storeError(w, r, nil, err)
		return nil, false
	}
	return sess, true
}

// answer records the person's answers: each question's chosen labels (field qN, N from 0) and free
// text (qN_other). Labels the set does not offer, or fields for questions it does not have, are
// refused with what was wrong; the first answer wins, a later one is told the set is closed.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.change(w, r)
	if !ok {
		return
	}
	qs := sess.Set().Questions
	for key := range r.PostForm {
		if key == "csrf" {
			continue
		}
		n, ok := questionField(key)
		if !ok || n >= len(qs) {
			s.refuse(w, r, sess, http.StatusBadRequest, fmt.Sprintf("The form has a field %q that this question set does not ask for; nothing was recorded.", key), "")
			return
		}
	}
	answers := make([]questions.Answer, len(qs))
	for i := range qs {
		name := "q" + strconv.Itoa(i)
		answers[i] = questions.Answer{QuestionIndex: i, Selected: r.PostForm[name], Other: r.PostForm.Get(name + "_other")}
		if answers[i].Selected == nil {
			answers[i].Selected = []string{}
		}
	}
	done, err := s.st.Answer(sess.ID, answers, "")
	if err != nil {
		s.storeError(w, r, sess, err)
		return
	}
	s.log.Info("question set answered on the web page", "sessionId", done.ID)
	s.replyEnded(w, r, http.StatusOK, "Answer recorded. The assistant has it now.", string(done.Status.Status))
}

// reject closes the set as rejected, with the optional reason.
func (s *Server) reject(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.change(w, r)
	if !ok {
		return
	}
	for key := range r.PostForm {
		if key != "csrf" && key != "reason" {
			s.refuse(w, r, sess, http.StatusBadRequest, fmt.Sprintf("The form has a field %q that a rejection does not take; nothing was recorded.", key), "")
			return
		}
	}
	// A browser posting the form without the script sends each line break of the textarea as CRLF
	// (the form encoding's rule), which the core would count as two characters where the person
	// typed one; the script posts LF. Either way the reason is stored as typed, with LF, and a
	// line break counts as one character, as at every other door.
	reason := strings.ReplaceAll(r.PostForm.Get("reason"), "\r\n", "\n")
	done, err := s.st.Reject(sess.ID, reason, "")
	if err != nil {
		s.storeError(w, r, sess, err)
		return
	}
	s.log.Info("question set rejected on the web page", "sessionId", sess.ID)
	s.replyEnded(w, r, http.StatusOK, "Rejected. The assistant has been told.", string(done.Status.Status))
}

// questionField parses qN and qN_other.
func questionField(key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, "q")
	if !ok {
		return 0, false
	}
	rest = strings.TrimSuffix(rest, "_other")
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// storeError words the store's refusals for the person, and gives back what they posted (see
// refuse). sess is the set as the request found it, nil when it could not be read.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, sess *questions.Session, err error) {
	var (
		ve     *questions.ValidationError
		closed *questions.ClosedError
	)
	switch {
	case errors.As(err, &closed):
		s.refuse(w, r, sess, http.StatusConflict, fmt.Sprintf("This question set was already %s; the first answer counts, so yours was not recorded.", closedWords(closed.Status)), string(closed.Status))
	case errors.As(err, &ve):
		s.refuse(w, r, sess, http.StatusBadRequest, "That answer does not fit the questions, nothing was recorded: "+ve.Error(), "")
	case errors.Is(err, questions.ErrNotFound):
		s.refuse(w, r, sess, http.StatusNotFound, "This question set no longer exists.", "removed")
	default:
		s.log.Warn("the store refused a change", "error", err)
		s.refuse(w, r, sess, http.StatusInternalServerError, "The answer could not be stored: "+err.Error(), "")
	}
}

func closedWords(st questions.State) string {
	switch st {
	case questions.Completed:
		return "answered"
	case questions.Rejected:
		return "rejected"
	case questions.TimedOut:
		return "closed (it timed out)"
	case questions.Abandoned:
		return "closed (abandoned)"
	}
	return string(st)
}

// reply answers with a message: JSON for the page's script (Accept: application/json), else a small
// page with a link back.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.replyEnded(w, r, code, msg, "")
}

// replyEnded is reply for a request that found the set closed, or closed it: the JSON says the
// status the set is in now ("state"), so the page can show it on the set's badge.
func (s *Server) replyEnded(w http.ResponseWriter, r *http.Request, code int, msg, state string) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		body := map[string]any{"ok": code < 300, "status": code, "message": msg}
		if state != "" {
			body["state"] = state
		}
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = pages().ExecuteTemplate(w, "message", messageView{OK: code < 300, Message: msg})
}

// wantsJSON says whether the request came from the page's script, which asks for JSON replies.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}
