package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/questions"
)

// questionsName is the tool's name (seed 002).
const questionsName = "ask_user_questions"

const questionsDescription = `Asks the user 1 to 4 multiple-choice questions and waits for the answers.
Use it when you need the user's decision to continue: a choice between approaches, a preference, a
missing requirement. Each question has a full "question", a short "header" (at most 12 characters,
e.g. "Language"), 2 to 4 "options" (each a "label" and an optional "description") and
"multiSelect" (true when several options may be chosen). Do not add an "Other" option: the user
can always answer in their own words. The user answers in a terminal (qkit questions wait) or a
script; the reply lists each question with the chosen labels and any free text, or says the user
rejected the set and why. The call waits up to questions.timeout (default 30 minutes) and sends
progress notifications while it waits. Call qkit_help with tool_name "ask_user_questions" for
examples and troubleshooting.`

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

How the user answers:
  - In a terminal: qkit questions wait (walks through each question; Ctrl-C hands the set back).
  - From a script: qkit questions list, then qkit questions answer ID --answer 1=LABEL, or
    qkit questions reject ID --reason TEXT.

Troubleshooting:
  - "At least one question is required": the questions array was empty or missing.
  - "questions[1].options: at least 2 options are required" (and similar): the message names the field to fix.
  - "... unknown field (did you mean "question"?)": the schema uses question/header, not prompt/title.
  - "... timed out waiting for the user's answer": nobody answered within questions.timeout; the set is marked
    timed_out. Continue without the answers, or ask again later. The user can raise the limit with
    qkit settings set questions.timeout 2h (0 waits until answered).
  - The call seems to hang: the user has not answered yet. Ask them to run qkit questions wait.
  - Your client gives up after 60 seconds: send a progress token with the call; qkit then sends progress
    notifications every few seconds while it waits, which clients use to keep the call alive.`

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
			h := &questionsHandler{d: d}
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
// waiting call shares one file watcher.
type questionsHandler struct {
	d     *Deps
	once  sync.Once
	store questions.Store
	err   error
}

func (h *questionsHandler) open() (questions.Store, error) {
	h.once.Do(func() {
		h.store, h.err = questions.Open(h.d.App.Config, questions.Options{Logger: h.d.App.Logger})
	})
	return h.store, h.err
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
	st, err := h.open()
	if err != nil {
		return ErrorResult(err.Error()), nil
	}
	cfg := h.d.App.Config
	var sessionID atomic.Value
	sessionID.Store("")
	stop := StartProgress(ctx, h.d, req, func(elapsed time.Duration) string {
		id, _ := sessionID.Load().(string)
		if len(id) > 8 {
			id = " " + id[:8]
		}
		return fmt.Sprintf("Waiting for the user to answer %d question(s) (question set%s, %s so far); they answer with qkit questions wait",
			len(set.Questions), id, elapsed.Round(time.Second))
	})
	res, _, err := st.Ask(ctx, set, questions.AskOptions{
		Source:       "mcp",
		Timeout:      cfg.Duration("questions.timeout"),
		Retention:    cfg.Duration("questions.retention"),
		Logger:       h.d.App.Logger.With("tool", questionsName),
		CancelReason: "the assistant cancelled the call",
		Created:      func(s *questions.Session) { sessionID.Store(s.ID) },
	})
	stop()
	if err != nil {
		return ErrorResult(questionsError(err)), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text()}}, StructuredContent: res}, nil
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
		return "the call was cancelled; the question set was marked abandoned"
	}
	return "Error in question session: " + err.Error()
}
