package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// questionsName is the tool's name.
const questionsName = "ask_user_questions"

const questionsDescription = `Asks the user 1 to 4 multiple-choice questions and waits for the answers.
Use it when you need the user's decision to continue: a choice between approaches, a preference, a
missing requirement. Each question has a full "question", a short "header" (at most 12 characters,
e.g. "Language"), 2 to 4 "options" (each a "label" and an optional "description") and
"multiSelect" (true when several options may be chosen). Do not add an "Other" option: the user
can always answer in their own words. The user answers in your client's own form (when it supports
elicitation), a terminal (qkit questions wait), a script or the web page (qkit questions serve);
the first answer counts. The reply lists each question with the chosen labels and any free text, or
says the user rejected the set and why. The call waits up to questions.timeout (default 30 minutes)
and sends progress notifications while it waits. If the call ends before the user answers (your
client gave up or it was cancelled), the question set stays answerable: call the tool again with
the same questions and that call collects the late answer (or keeps waiting for it) instead of
asking anew. Call qkit_help with tool_name "ask_user_questions" for examples and troubleshooting.`

const questionsHelp = `Waits for the user's answers to up to 4 questions, each with 2 to 4 options plus free text.

Examples:
  One single-choice question:
    {"questions": [{"question": "Which language should the CLI be written in?", "header": "Language",
      "options": [{"label": "Go", "description": "one static binary"}, {"label": "TypeScript"}],
      "multiSelect": false}]}
    -> Here are the user's answers:

       1. [Language] Which language should the CLI be written in?
       → Go — one static binary
  Several choices allowed:
    {"questions": [{"question": "Which checks should CI run?", "header": "CI", "multiSelect": true,
      "options": [{"label": "Lint"}, {"label": "Unit tests"}, {"label": "Fuzz"}]}]}
  The structured result (structuredContent) has the same answers as data:
    {"sessionId": "...", "callId": "...", "status": "completed",
     "answers": [{"questionIndex": 0, "header": "CI", "question": "...", "selected": ["Lint"], "other": "..."}]}

Common patterns:
  - Ask everything you need in one call (up to 4 questions) rather than one call per question.
  - Put the recommended option first and say why in its description.
  - A rejection is an answer: the user does not want to decide now. Continue without asking again, or
    ask in the conversation.

How the user answers (the first answer counts, the other ways are withdrawn):
  - In the client's own form, when the client declared form elicitation (questions.via auto or
    elicitation).
  - In a terminal: qkit questions wait (walks through each question; Ctrl-C hands the set back).
  - From a script: qkit questions list, then qkit questions answer ID --answer 1=LABEL, or
    qkit questions reject ID --reason TEXT.
  - On the web page of qkit questions serve, from any device that can reach it.

Late answers:
  - If your call ends before the user answers (a client timeout, a cancellation, the server
    restarting), the set is not lost: qkit questions list shows it as "detached" and the user can
    still answer it. Call ask_user_questions again with exactly the same questions: the call returns
    the answer given meanwhile, or waits for it, instead of asking a second time.

Troubleshooting:
  - "At least one question is required": the questions array was empty or missing.
  - "questions[1].options: at least 2 options are required" (and similar): the message names the field to fix.
  - "... unknown field (did you mean "question"?)": the schema uses question/header, not prompt/title.
  - "... timed out waiting for the user's answer": nobody answered within questions.timeout; the set is marked
    timed_out. Continue without the answers, or ask again later. The user can raise the limit with
    qkit settings set questions.timeout 2h (0 waits until answered).
  - The call seems to hang: the user has not answered yet. Ask them to run qkit questions wait.
  - Your client gives up after 60 seconds: send a progress token with the call; qkit then sends a progress
    notification as soon as the set is stored and every questions.progress_interval (5s) after, which
    clients use to keep the call alive. If it gave up anyway, call again with the same questions.`

// questionsInputSchema documents the limits for the assistant. Validation is done by the core, so
// that every error names its field in the same words as the command line's.
const questionsInputSchema = `{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array", "minItems": 1, "maxItems": 4,
      "description": "The questions to ask, 1 to 4.",
      "items": {
        "type": "object",
        "properties": {
          "question": {"type": "string", "description": "The full question, ending with a question mark."},
          "header": {"type": "string", "maxLength": 12, "description": "A very short label shown as a tag, at most 12 characters, e.g. \"Language\"."},
          "options": {
            "type": "array", "minItems": 2, "maxItems": 4,
            "description": "2 to 4 choices. Do not add an \"Other\" choice: free text is always allowed.",
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "description": "The choice, short (1 to 5 words)."},
                "description": {"type": "string", "description": "What the choice means or implies."}
              },
              "required": ["label"],
              "additionalProperties": false
            }
          },
          "multiSelect": {"type": "boolean", "default": false, "description": "true when several options may be chosen."}
        },
        "required": ["question", "header", "options"],
        "additionalProperties": false
      }
    }
  },
  "required": ["questions"],
  "additionalProperties": false
}`

// questionsOutputSchema describes structuredContent (questions.Result).
const questionsOutputSchema = `{
  "type": "object",
  "properties": {
    "sessionId": {"type": "string"},
    "callId": {"type": "string"},
    "status": {"type": "string", "enum": ["completed", "rejected"]},
    "answers": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "questionIndex": {"type": "integer"},
          "header": {"type": "string"},
          "question": {"type": "string"},
          "selected": {"type": "array", "items": {"type": "string"}},
          "other": {"type": "string", "description": "The user's free text, if any."}
        },
        "required": ["questionIndex", "header", "question", "selected"]
      }
    },
    "rejectionReason": {"type": "string"}
  },
  "required": ["sessionId", "callId", "status", "answers"]
}`

func questionsTool() Tool {
	return Tool{
		Name: questionsName,
		Help: questionsHelp,
		Add: func(s *mcp.Server, d *Deps) {
			h := &questionsHandler{d: d, rt: newRoundTrip()}
			s.AddTool(&mcp.Tool{
				Name:         questionsName,
				Title:        "Ask User Questions",
				Description:  questionsDescription,
				InputSchema:  json.RawMessage(questionsInputSchema),
				OutputSchema: json.RawMessage(questionsOutputSchema),
				Annotations:  &mcp.ToolAnnotations{Title: "Ask User Questions", OpenWorldHint: new(true), ReadOnlyHint: false, IdempotentHint: true},
			}, h.call)
		},
	}
}

// questionsHandler holds one session store per server, opened on the first call, so that every
// waiting call shares one file watcher (or one NATS connection and watcher). A store that could not
// be opened (a NATS server that is down) is tried again on the next call.
type questionsHandler struct {
	d     *Deps
	mu    sync.Mutex
	rt    *roundTrip
	store questions.Store
}

func (h *questionsHandler) open() (questions.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.store == nil {
		kinds := h.d.QuestionStores
		if kinds == nil {
			kinds = questions.Kinds{"file": dirstore.Open}
		}
		st, err := kinds.Open(h.d.App.Config, questions.Options{Logger: h.d.App.Logger})
		if err != nil {
			return nil, err
		}
		h.store = st
	}
	return h.store, nil
}

func (h *questionsHandler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args json.RawMessage
	if req.Params != nil {
		args = req.Params.Arguments
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	set, err := questions.ParseQuestionSet(args)
	if err != nil {
		return ErrorResult(err.Error()), nil
	}
	mode, err := questionsVia(config.QuestionsVia.Get(h.d.App.Config), req)
	if err != nil {
		return ErrorResult(err.Error()), nil
	}
	st, err := h.open()
	if err != nil {
		return ErrorResult(err.Error()), nil
	}
	opts := h.askOptions(ctx, req, len(set.Questions), mode != elicitNone)
	if mode == elicitRoundTrip {
		id, form, resumed := h.rt.resumed(req)
		if !resumed {
			return h.askInForm(st, set, opts, "")
		}
		problem, err := h.settleResumed(st, set, id, form, opts)
		if err != nil {
			return ErrorResult(questionsError(err)), nil
		}
		if problem != "" {
			opts.Resume = id
			return h.askInForm(st, set, opts, problem)
		}
		opts.Resume = id
	}
	var form *formAsker
	if mode == elicitDirect {
		created := opts.Created
		opts.Created = func(s *questions.Session) {
			created(s)
			if s.Status.Status.Open() {
				form = startForm(ctx, h.d, req, st, s)
			}
		}
	}
	res, _, err := st.Ask(ctx, set, opts)
	form.stop() // withdraws the client's form when another answer won
	if err != nil {
		return ErrorResult(questionsError(err)), nil
	}
	return questionsResult(res), nil
}

func questionsResult(res *questions.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text()}}, StructuredContent: res}
}

// askOptions are the settings of one call: a detachable set, the keep-alive, the timeouts.
func (h *questionsHandler) askOptions(ctx context.Context, req *mcp.CallToolRequest, count int, inForm bool) questions.AskOptions {
	cfg := h.d.App.Config
	keep := newKeepAlive(ctx, req, h.d, count)
	keep.inForm = inForm
	opts := questions.AskOptions{
		Source:        "mcp",
		Timeout:       config.QuestionsTimeout.Get(cfg),
		Retention:     config.QuestionsRetention.Get(cfg),
		Logger:        h.d.App.Logger.With("tool", questionsName),
		CancelReason:  "the assistant's call ended",
		Detachable:    true,
		Created:       keep.created,
		ProgressEvery: config.QuestionsProgress.Get(cfg),
	}
	// 0: only the first notification. Without a progress token there is nothing to send, so no
	// timer runs: a hundred waiting calls stay idle.
	if opts.ProgressEvery > 0 && keep.token != nil {
		opts.Progress = keep.progress
	}
	return opts
}

// askInForm is the first leg of a multi-round-trip call: the set is stored (or taken over) and left
// detached, so every other way can answer it while the client shows its form; the call returns the
// form. An outcome collected from a detached set is returned at once.
func (h *questionsHandler) askInForm(st questions.Store, set *questions.QuestionSet, opts questions.AskOptions, problem string) (*mcp.CallToolResult, error) {
	sess, err := questions.Prepare(st, set, opts)
	if err != nil {
		return ErrorResult(questionsError(err)), nil
	}
	if !sess.Status.Status.Open() {
		return h.collected(sess)
	}
	if _, err := st.Detach(sess.ID, "waiting for the answer in the client's form"); err != nil {
		return ErrorResult(questionsError(err)), nil
	}
	return h.rt.inputRequest(sess, problem), nil
}

// settleResumed stores the answer the client's form brought back. problem is non-empty when the
// answer does not fit the set and the form must be shown again.
func (h *questionsHandler) settleResumed(st questions.Store, set *questions.QuestionSet, id string, form *mcp.ElicitResult, opts questions.AskOptions) (problem string, err error) {
	cur, err := st.Get(id)
	if err != nil {
		return "", err
	}
	if !cur.Status.Status.Open() {
		return "", nil // another answer won while the form was shown; Ask collects it
	}
	return settleForm(st, id, set, form)
}

// collected returns an outcome a repeated call collected without waiting.
func (h *questionsHandler) collected(sess *questions.Session) (*mcp.CallToolResult, error) {
	switch sess.Status.Status {
	case questions.Completed, questions.Rejected:
		return questionsResult(questions.ResultOf(sess)), nil
	}
	return ErrorResult(questionsError(&questions.EndedError{ID: sess.ID, Status: sess.Status.Status, Reason: sess.Status.Reason})), nil
}

// keepAlive sends the call's progress notifications, when the client gave a progress token: the
// first as soon as the set is stored (saying how to answer it), then one per
// questions.progress_interval from the wait itself (no goroutine of its own).
type keepAlive struct {
	ctx   context.Context
	req   *mcp.CallToolRequest
	d     *Deps
	token any
	count int
	n     int
	how   string
	// inForm: the set is also put to the person in the client's own form.
	inForm bool
}

func newKeepAlive(ctx context.Context, req *mcp.CallToolRequest, d *Deps, count int) *keepAlive {
	k := &keepAlive{ctx: ctx, req: req, d: d, count: count}
	if req.Params != nil && req.Session != nil {
		k.token = req.Params.GetProgressToken()
	}
	return k
}

func (k *keepAlive) created(s *questions.Session) {
	page := ""
	if r, ok := questions.FindPage(k.d.App.Config.Paths.State); ok {
		page = r.URL
	}
	k.how = questions.AnswerHint(k.inForm, page)
	k.send(fmt.Sprintf("Question set %s is waiting for the user's answer to %d question(s); they answer %s.",
		s.ShortID(), k.count, k.how))
}

func (k *keepAlive) progress(elapsed time.Duration, s *questions.Session) {
	k.send(fmt.Sprintf("Waiting for the user to answer %d question(s) (question set %s, %s so far); they answer %s.",
		k.count, s.ShortID(), elapsed.Round(time.Second), k.how))
}

func (k *keepAlive) send(msg string) {
	if k.token == nil {
		return
	}
	k.n++
	err := k.req.Session.NotifyProgress(k.ctx, &mcp.ProgressNotificationParams{ProgressToken: k.token, Progress: float64(k.n), Message: msg})
	if err != nil && k.ctx.Err() == nil {
		k.d.App.Logger.Debug("progress notification failed", "error", err)
	}
}

// questionsError words a wait that ended without an answer for the assistant.
func questionsError(err error) string {
	var ended *questions.EndedError
	switch {
	case errors.As(err, &ended) && ended.Status == questions.TimedOut:
		return err.Error() + ". The user did not answer in time: continue without the answers, or ask again later."
	case errors.As(err, &ended):
		return err.Error() + ". The question set cannot be answered any more; ask again if you still need the answers."
	case errors.Is(err, context.Canceled):
		return "the call was cancelled; the question set stays answerable (detached): call ask_user_questions again with the same questions to collect the answer"
	}
	return "Error in question session: " + err.Error()
}
