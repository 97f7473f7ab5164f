// Package questions is the core of ask_user_questions: the question-set schema and its validation,
// the on-disk session store (one directory per session, atomic writes, a lock per session so that
// exactly one of answer, rejection, timeout or abandonment wins), waiting woken by fsnotify, the text
// and structured answers returned to the assistant, and cleanup. The MCP tool and the `qkit questions`
// commands are thin adapters over it.
package questions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of a question set, as in Claude Code's AskUserQuestion.
const (
	MinQuestions    = 1
	MaxQuestions    = 4
	MinOptions      = 2
	MaxOptions      = 4
	MaxHeaderLen    = 12
	MaxQuestionLen  = 2000
	MaxLabelLen     = 200
	MaxDescLen      = 1000
	MaxReasonLen    = 2000
	MaxOtherTextLen = 10000
)

// Option is one choice of a question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one question of a set. The person may always answer with free text ("Other").
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

// QuestionSet is what an assistant asks in one call.
type QuestionSet struct {
	Questions []Question `json:"questions"`
}

// FieldError is one problem with one field of a question set or an answer.
type FieldError struct {
	Field string // e.g. "questions[1].options"; empty for a problem with the whole input
	Msg   string
}

func (e FieldError) String() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ValidationError lists every problem found in a question set or answer, each naming its field.
type ValidationError struct {
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// add records a problem. The field's path can hold a key exactly as the input wrote it (an unknown
// field), so it is made visible here, once for every caller: an error printed on a terminal must
// not carry the input's control sequences (an OSC title, a bidirectional override) with it.
func (e *ValidationError) add(field, format string, args ...any) {
	e.Problems = append(e.Problems, FieldError{Field: termLine(field), Msg: fmt.Sprintf(format, args...)})
}

func (e *ValidationError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// ErrNoQuestions is the requirement's message for an empty or missing questions array.
const ErrNoQuestions = "At least one question is required"

// knownAliases maps the field names of other tools' schemas to ours, for a helpful message.
var knownAliases = map[string]string{"prompt": "question", "title": "header", "text": "question", "choices": "options", "multiselect": "multiSelect", "multi_select": "multiSelect"}

// ParseQuestionSet decodes and validates a question set from JSON. Every problem names its field,
// e.g. `questions[1].options: at least 2 options are required`.
func ParseQuestionSet(data []byte) (*QuestionSet, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, &ValidationError{Problems: []FieldError{{Msg: "invalid JSON: " + jsonProblem(err)}}}
	}
	if dec.More() {
		return nil, &ValidationError{Problems: []FieldError{{Msg: "invalid JSON: unexpected data after the question set"}}}
	}
	return QuestionSetFrom(root)
}

// QuestionSetFrom validates an already decoded JSON value (objects as map[string]any) as a question set.
func QuestionSetFrom(root any) (*QuestionSet, error) {
	ve := &ValidationError{}
	obj, ok := root.(map[string]any)
	if !ok {
		// A bare array of questions is accepted too: it is what people write by hand.
		if arr, isArr := root.([]any); isArr {
			obj = map[string]any{"questions": arr}
		} else {
			ve.add("", "expected a JSON object with a \"questions\" array, got %s", jsonType(root))
			return nil, ve
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k != "questions" {
			ve.add(k, "unknown field (expected only \"questions\")")
		}
	}
	set := &QuestionSet{}
	raw, present := obj["questions"]
	arr, isArr := raw.([]any)
	switch {
	case !present || raw == nil || isArr && len(arr) == 0:
		ve.Problems = append(ve.Problems, FieldError{Msg: ErrNoQuestions})
		return nil, ve
	case !isArr:
		ve.add("questions", "expected an array, got %s", jsonType(raw))
		return nil, ve
	case len(arr) > MaxQuestions:
		ve.add("questions", "at most %d questions are allowed, got %d", MaxQuestions, len(arr))
	}
	for i, q := range arr {
		set.Questions = append(set.Questions, parseQuestion(ve, fmt.Sprintf("questions[%d]", i), q))
	}
	checkDuplicates(ve, set)
	if err := ve.orNil(); err != nil {
		return nil, err
	}
	return set, nil
}

func parseQuestion(ve *ValidationError, path string, v any) Question {
	var q Question
	obj, ok := v.(map[string]any)
	if !ok {
		ve.add(path, "expected an object, got %s", jsonType(v))
		return q
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "question", "header", "options", "multiSelect":
		default:
			if alias, ok := knownAliases[strings.ToLower(k)]; ok {
				ve.add(path+"."+k, "unknown field (did you mean %q?)", alias)
			} else {
				ve.add(path+"."+k, "unknown field (expected question, header, options, multiSelect)")
			}
		}
	}
	q.Question = text(ve, path+".question", obj["question"], true, MaxQuestionLen)
	q.Header = text(ve, path+".header", obj["header"], true, MaxHeaderLen)
	switch m := obj["multiSelect"].(type) {
	case nil:
	case bool:
		q.MultiSelect = m
	default:
		ve.add(path+".multiSelect", "expected true or false, got %s", jsonType(m))
	}
	raw, present := obj["options"]
	opts, isArr := raw.([]any)
	switch {
	case !present || raw == nil:
		ve.add(path+".options", "at least %d options are required", MinOptions)
		return q
	case !isArr:
		ve.add(path+".options", "expected an array, got %s", jsonType(raw))
		return q
	case len(opts) < MinOptions:
		ve.add(path+".options", "at least %d options are required", MinOptions)
	case len(opts) > MaxOptions:
		ve.add(path+".options", "at most %d options are allowed, got %d", MaxOptions, len(opts))
	}
	for j, o := range opts {
		op := fmt.Sprintf("%s.options[%d]", path, j)
		oo, ok := o.(map[string]any)
		if !ok {
			if s, isStr := o.(string); isStr {
				// A bare string is a label without a description.
				q.Options = append(q.Options, Option{Label: text(ve, op, s, true, MaxLabelLen)})
				continue
			}
			ve.add(op, "expected an object with a label, got %s", jsonType(o))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(oo)) {
			if k != "label" && k != "description" {
				ve.add(op+"."+k, "unknown field (expected label, description)")
			}
		}
		q.Options = append(q.Options, Option{
			Label:       text(ve, op+".label", oo["label"], true, MaxLabelLen),
			Description: text(ve, op+".description", oo["description"], false, MaxDescLen),
		})
	}
	return q
}

func checkDuplicates(ve *ValidationError, set *QuestionSet) {
	for i, q := range set.Questions {
		seen := map[string]int{}
		for j, o := range q.Options {
			key := strings.ToLower(strings.TrimSpace(o.Label))
			if key == "" {
				continue
			}
			if k, dup := seen[key]; dup {
				ve.add(fmt.Sprintf("questions[%d].options[%d].label", i, j), "duplicate of options[%d] (%q); labels must differ", k, q.Options[k].Label)
				continue
			}
			seen[key] = j
		}
	}
}

// text reads a string field: required ones must not be blank, and none may exceed max characters.
func text(ve *ValidationError, path string, v any, required bool, max int) string {
	switch s := v.(type) {
	case nil:
		if required {
			ve.add(path, "is required")
		}
		return ""
	case string:
		if required && strings.TrimSpace(s) == "" {
			ve.add(path, "must not be empty")
		}
		if !utf8.ValidString(s) {
			ve.add(path, "is not valid UTF-8")
		}
		if n := utf8.RuneCountInString(s); n > max {
			ve.add(path, "at most %d characters are allowed, got %d", max, n)
		}
		return strings.TrimSpace(s)
	default:
		ve.add(path, "expected a string, got %s", jsonType(v))
		return ""
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	if ok := asSyntax(err, &se); ok {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

// Validate checks a question set built in Go (not parsed from JSON) against the same rules.
func (s *QuestionSet) Validate() error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = ParseQuestionSet(data)
	return err
}
