package questions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Answer is the person's answer to one question: the chosen labels and any free text ("Other").
type Answer struct {
	QuestionIndex int      `json:"questionIndex"`
	Selected      []string `json:"selected"`
	Other         string   `json:"other,omitempty"`
}

// CheckAnswers validates answers against a question set and returns them in question order with
// labels normalised to the option's exact spelling. Every question needs exactly one entry; a
// single-choice question takes one label or free text; a multiple-choice one any number of labels,
// free text, or nothing.
func CheckAnswers(set *QuestionSet, answers []Answer) ([]Answer, error) {
	ve := &ValidationError{}
	out := make([]Answer, len(set.Questions))
	seen := make([]bool, len(set.Questions))
	for i, a := range answers {
		path := fmt.Sprintf("answers[%d]", i)
		if a.QuestionIndex < 0 || a.QuestionIndex >= len(set.Questions) {
			ve.add(path+".questionIndex", "%d is out of range: the set has %d question(s), numbered from 0", a.QuestionIndex, len(set.Questions))
			continue
		}
		qi := a.QuestionIndex
		q := set.Questions[qi]
		if seen[qi] {
			ve.add(path+".questionIndex", "question %d (%s) is answered twice", qi+1, termLine(q.Header))
			continue
		}
		seen[qi] = true
		norm := Answer{QuestionIndex: qi, Selected: []string{}, Other: strings.TrimSpace(a.Other)}
		if !utf8.ValidString(a.Other) || utf8.RuneCountInString(a.Other) > MaxOtherTextLen {
			ve.add(path+".other", "must be valid UTF-8 of at most %d characters", MaxOtherTextLen)
		}
		for _, l := range a.Selected {
			label, err := matchLabel(q, l)
			if err != nil {
				ve.add(path+".selected", "question %d (%s): %v", qi+1, termLine(q.Header), err)
				continue
			}
			if !contains(norm.Selected, label) {
				norm.Selected = append(norm.Selected, label)
			}
		}
		if !q.MultiSelect {
			n := len(norm.Selected)
			if norm.Other != "" {
				n++
			}
			switch {
			case n > 1:
				ve.add(path, "question %d (%s) is single-choice: give one label or free text, not %s", qi+1, termLine(q.Header), describeChoice(norm))
			case n == 0:
				ve.add(path, "question %d (%s) has no answer: choose one of %s or give free text", qi+1, termLine(q.Header), quoteLabels(q))
			}
		}
		out[qi] = norm
	}
	for qi, ok := range seen {
		if !ok {
			ve.add("answers", "question %d (%s) has no answer", qi+1, termLine(set.Questions[qi].Header))
		}
	}
	if err := ve.orNil(); err != nil {
		return nil, err
	}
	return out, nil
}

func describeChoice(a Answer) string {
	parts := make([]string, 0, len(a.Selected)+1)
	for _, s := range a.Selected {
		parts = append(parts, strconv.Quote(s))
	}
	if a.Other != "" {
		parts = append(parts, "free text")
	}
	return strings.Join(parts, " and ")
}

// matchLabel finds the option a label names: exactly, or else ignoring case and surrounding space.
func matchLabel(q Question, label string) (string, error) {
	for _, o := range q.Options {
		if o.Label == label {
			return o.Label, nil
		}
	}
	t := strings.TrimSpace(label)
	for _, o := range q.Options {
		if strings.EqualFold(o.Label, t) {
			return o.Label, nil
		}
	}
	return "", fmt.Errorf("unknown option %q; valid options: %s", label, quoteLabels(q))
}

func quoteLabels(q Question) string {
	parts := make([]string, len(q.Options))
	for i, o := range q.Options {
		parts[i] = strconv.Quote(o.Label)
	}
	return strings.Join(parts, ", ")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// labelOrNumber finds the option an --answer value names: a label (as matchLabel matches it), or
// else the option's number from 1, in the order the set lists them. A label wins over a number, so
// a label that is itself a number still means that option.
func labelOrNumber(q Question, v string) (string, error) {
	if label, err := matchLabel(q, v); err == nil {
		return label, nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 && n <= len(q.Options) {
		return q.Options[n-1].Label, nil
	}
	return "", fmt.Errorf("unknown option %q; accepted: a label (%s) or an option number from 1 to %d", v, quoteLabels(q), len(q.Options))
}

// Spec is one --answer or --other flag: a question (1-based number or header) and its value.
type Spec struct {
	Key   string
	Value string
}

// ParseSpec splits `N=VALUE` (or `HEADER=VALUE`). flag names the flag for the error message.
func ParseSpec(flag, s string) (Spec, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Spec{}, fmt.Errorf("invalid %s %q: expected N=VALUE, where N is the question's number (1, 2, …) or its header", flag, s)
	}
	return Spec{Key: k, Value: v}, nil
}

// questionFor resolves a spec's key to a question index: a number from 1, or a header (any case).
func questionFor(set *QuestionSet, flag string, sp Spec) (int, error) {
	if n, err := strconv.Atoi(sp.Key); err == nil {
		if n < 1 || n > len(set.Questions) {
			return 0, fmt.Errorf("%s %s=…: question %d is out of range: the set has %d question(s), numbered from 1", flag, sp.Key, n, len(set.Questions))
		}
		return n - 1, nil
	}
	found := -1
	for i, q := range set.Questions {
		if strings.EqualFold(q.Header, sp.Key) {
			if found >= 0 {
				return 0, fmt.Errorf("%s %s=…: several questions have that header; use the question's number", flag, sp.Key)
			}
			found = i
		}
	}
	if found < 0 {
		hs := make([]string, len(set.Questions))
		for i, q := range set.Questions {
			hs[i] = fmt.Sprintf("%d (%s)", i+1, termLine(q.Header))
		}
		return 0, fmt.Errorf("%s %s=…: no such question; the questions are %s", flag, sp.Key, strings.Join(hs, ", "))
	}
	return found, nil
}

// splitLabels splits `A,B` into labels; `\,` is a literal comma. A value that is exactly one of the
// question's labels (commas and all) is taken whole.
func splitLabels(q Question, v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, o := range q.Options {
		if strings.EqualFold(o.Label, strings.TrimSpace(v)) {
			return []string{v}
		}
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == ',':
			cur.WriteByte(',')
			i++
		case v[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(v[i])
		}
	}
	return append(out, cur.String())
}

// AnswersFromSpecs builds answers from --answer and --other flags. Questions not named by any flag are
// left out (CheckAnswers then reports them). Errors name the flag and list the valid choices.
func AnswersFromSpecs(set *QuestionSet, answers, others []string) ([]Answer, error) {
	byQ := map[int]*Answer{}
	order := []int{}
	get := func(i int) *Answer {
		if a, ok := byQ[i]; ok {
			return a
		}
		a := &Answer{QuestionIndex: i, Selected: []string{}}
		byQ[i] = a
		order = append(order, i)
		return a
	}
	for _, s := range answers {
		sp, err := ParseSpec("--answer", s)
		if err != nil {
			return nil, err
		}
		qi, err := questionFor(set, "--answer", sp)
		if err != nil {
			return nil, err
		}
		q := set.Questions[qi]
		labels := splitLabels(q, sp.Value)
		if !q.MultiSelect && len(labels) > 1 {
			return nil, fmt.Errorf("--answer %s: question %d (%s) is single-choice: give one label or option number, not %d (labels: %s)", s, qi+1, termLine(q.Header), len(labels), quoteLabels(q))
		}
		a := get(qi)
		for _, l := range labels {
			label, err := labelOrNumber(q, l)
			if err != nil {
				return nil, fmt.Errorf("--answer %s: question %d (%s): %v (or use --other %d=TEXT for a free-text answer)", s, qi+1, termLine(q.Header), err, qi+1)
			}
			if !contains(a.Selected, label) {
				a.Selected = append(a.Selected, label)
			}
		}
	}
	for _, s := range others {
		sp, err := ParseSpec("--other", s)
		if err != nil {
			return nil, err
		}
		qi, err := questionFor(set, "--other", sp)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(sp.Value) == "" {
			return nil, fmt.Errorf("--other %s: the free text is empty", s)
		}
		a := get(qi)
		if a.Other != "" {
			a.Other += "\n"
		}
		a.Other += sp.Value
	}
	out := make([]Answer, 0, len(order))
	for _, i := range order {
		out = append(out, *byQ[i])
	}
	return out, nil
}

// answersFile is the format of --answers-file: the "answers" array of answers.json (questionIndex
// from 0), or a bare array of the same entries.
type answersFile struct {
	Answers []Answer `json:"answers"`
}

// ParseAnswersFile reads answers as written by a script: {"answers":[{"questionIndex":0,
// "selected":["Go"],"other":"…"}]} or the bare array.
func ParseAnswersFile(data []byte) ([]Answer, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("the answers file is empty")
	}
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return err
		}
		if d.More() {
			return fmt.Errorf("unexpected data after the answers")
		}
		return nil
	}
	var f answersFile
	var err error
	if data[0] == '[' {
		err = dec(&f.Answers)
	} else {
		err = dec(&f)
	}
	if err != nil {
		return nil, fmt.Errorf("answers file: %v (expected {\"answers\":[{\"questionIndex\":0,\"selected\":[\"LABEL\"],\"other\":\"TEXT\"}]})", err)
	}
	for i := range f.Answers {
		if f.Answers[i].Selected == nil {
			f.Answers[i].Selected = []string{}
		}
	}
	return f.Answers, nil
}
