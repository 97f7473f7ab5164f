package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/questions"
)

// The client's own form (MCP elicitation) is one more way for the person to answer, beside the
// terminal, scripts and the web page: the answer goes into the store like any other, so the
// store's one-winner rule decides which answer counts, and the result has the same shape whatever
// way won. Clients before protocol 2026-07-28 are asked directly while the call waits, and the form
// is withdrawn (notifications/cancelled) when another answer wins. Newer clients cannot be asked
// from inside a call: the call returns the form as an input request (multi-round-trip), the set
// stays answerable meanwhile, and the call that comes back with the form's answer counts it unless
// another answer won first.

// elicitAttempts is how often the form is shown again when its answer does not fit the set.
const elicitAttempts = 3

// questionsInput is the id of the form in a multi-round-trip input request.
const questionsInput = "answers"

// protocolMRTR is the first protocol version that asks through input requests only.
const protocolMRTR = "2026-07-28"

// elicitMode says how this call can use the client's form.
type elicitMode int

const (
	elicitNone      elicitMode = iota // store only
	elicitDirect                      // elicitation/create while the call waits
	elicitRoundTrip                   // input requests (multi-round-trip)
)

// questionsVia decides how the call reaches the person; an error when the setting demands the
// client's form and the client has none.
func questionsVia(via string, req *mcp.CallToolRequest) (elicitMode, error) {
	if via == "store" {
		return elicitNone, nil
	}
	if !canElicitForm(req) {
		if via == "elicitation" {
			return elicitNone, errors.New("questions.via is \"elicitation\" but this MCP client did not declare form elicitation, " +
				"so the questions cannot be put to the user in it. Tell the user; they can set questions.via to auto " +
				"(qkit settings set questions.via auto) to answer with qkit questions wait or the web page instead")
		}
		return elicitNone, nil
	}
	if protocolVersion(req) >= protocolMRTR {
		return elicitRoundTrip, nil
	}
	return elicitDirect, nil
}

// canElicitForm reports whether the client declared form elicitation (an empty elicitation
// capability means form, for clients older than the form/url split).
func canElicitForm(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

func protocolVersion(req *mcp.CallToolRequest) string {
	if v := req.ProtocolVersion(); v != "" {
		return v
	}
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil {
			return p.ProtocolVersion
		}
	}
	return ""
}

// formFor is the elicitation of a question set: per question an enum of its labels (an array of
// them for multiple choice) and a free-text field. None is required, so the person can answer with
// free text alone; the answer is checked against the set afterwards.
func formFor(set *questions.QuestionSet, problem string) *mcp.ElicitParams {
	props := map[string]any{}
	for i, q := range set.Questions {
		labels := make([]any, len(q.Options))
		var desc []string
		for j, o := range q.Options {
			labels[j] = o.Label
			if o.Description != "" {
				desc = append(desc, o.Label+": "+o.Description)
			}
		}
		d := q.Question
		if len(desc) > 0 {
			d += " (" + strings.Join(desc, "; ") + ")"
		}
		key := fmt.Sprintf("q%d", i+1)
		if q.MultiSelect {
			props[key] = map[string]any{"type": "array", "title": q.Header, "description": d + " Choose any.",
				"items": map[string]any{"type": "string", "enum": labels}, "uniqueItems": true}
		} else {
			props[key] = map[string]any{"type": "string", "title": q.Header, "description": d, "enum": labels}
		}
		props[key+"_other"] = map[string]any{"type": "string", "title": q.Header + ": other",
			"description": "Or answer in your own words", "maxLength": questions.MaxOtherTextLen}
	}
	msg := fmt.Sprintf("The assistant asks %d question(s). Choose the options (or write your own answer), or decline to reject the questions.", len(set.Questions))
	if problem != "" {
		msg = "That answer did not fit: " + problem + "\n\n" + msg
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg,
		RequestedSchema: map[string]any{"type": "object", "properties": props}}
}

// answersFrom reads the form's content back as answers to the set (unchecked).
func answersFrom(set *questions.QuestionSet, content map[string]any) []questions.Answer {
	out := make([]questions.Answer, len(set.Questions))
	for i := range set.Questions {
		key := fmt.Sprintf("q%d", i+1)
		a := questions.Answer{QuestionIndex: i, Selected: []string{}}
		switch v := content[key].(type) {
		case string:
			if v != "" {
				a.Selected = append(a.Selected, v)
			}
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					a.Selected = append(a.Selected, s)
				}
			}
		}
		if s, ok := content[key+"_other"].(string); ok {
			a.Other = s
		}
		out[i] = a
	}
	return out
}

// settleForm puts the form's result into the store: accept answers the set, decline rejects it,
// cancel leaves it to the other ways. retry is non-empty when the answer did not fit the set (the
// form should be shown again with it); a set already answered another way is not an error here:
// the caller's wait reports the winner.
func settleForm(st questions.Store, id string, set *questions.QuestionSet, r *mcp.ElicitResult) (retry string, err error) {
	switch r.Action {
	case "accept":
		_, err = st.Answer(id, answersFrom(set, r.Content), "")
		var ve *questions.ValidationError
		if errors.As(err, &ve) {
			return ve.Error(), nil
		}
	case "decline":
		_, err = st.Reject(id, "declined in the client's form", "")
	default:
		return "", nil // cancelled: the person closed the form; the terminal, scripts and the page still can answer
	}
	var closed *questions.ClosedError
	if errors.As(err, &closed) {
		return "", nil // another answer won first
	}
	return "", err
}

// formAsker puts the set to the person in the client while the call waits (clients before
// 2026-07-28), and withdraws the form when stopped.
type formAsker struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startForm(ctx context.Context, d *Deps, req *mcp.CallToolRequest, st questions.Store, sess *questions.Session) *formAsker {
	ctx, cancel := context.WithCancel(ctx)
	f := &formAsker{cancel: cancel}
	set := sess.Set()
	log := d.App.Logger.With("tool", questionsName, "sessionId", sess.ID)
	f.wg.Go(func() {
		problem := ""
		for range elicitAttempts {
			r, err := req.Session.Elicit(ctx, formFor(set, problem))
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("the client's form failed; the other ways to answer remain", "error", err)
				}
				return
			}
			if problem, err = settleForm(st, sess.ID, set, r); err != nil {
				log.Warn("the answer from the client's form could not be stored", "error", err)
				return
			}
			if problem == "" {
				log.Info("the client's form was answered", "action", r.Action)
				return
			}
		}
	})
	return f
}

// stop withdraws the form (when still shown) and waits for it to go.
func (f *formAsker) stop() {
	if f == nil {
		return
	}
	f.cancel()
	f.wg.Wait()
}

// roundTrip carries a set through multi-round-trip elicitation. The request state names the set,
// bound to this server by an HMAC so that a client cannot answer or collect another set by naming
// it.
type roundTrip struct{ key []byte }

func newRoundTrip() *roundTrip {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &roundTrip{key: key}
}

func (rt *roundTrip) state(id string) string {
	m := hmac.New(sha256.New, rt.key)
	m.Write([]byte(id))
	return id + "." + hex.EncodeToString(m.Sum(nil))
}

// resumed returns the set id and the form's result when this call comes back with them.
func (rt *roundTrip) resumed(req *mcp.CallToolRequest) (id string, r *mcp.ElicitResult, ok bool) {
	if req.Params == nil || req.Params.InputResponses == nil || req.Params.RequestState == "" {
		return "", nil, false
	}
	id, _, _ = strings.Cut(req.Params.RequestState, ".")
	if !hmac.Equal([]byte(rt.state(id)), []byte(req.Params.RequestState)) {
		return "", nil, false
	}
	r, ok = req.Params.InputResponses[questionsInput].(*mcp.ElicitResult)
	return id, r, ok && r != nil
}

// inputRequest is the call's first result for a multi-round-trip client: the form, and the set in
// the request state.
func (rt *roundTrip) inputRequest(sess *questions.Session, problem string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{questionsInput: formFor(sess.Set(), problem)},
		RequestState:  rt.state(sess.ID),
	}
}
