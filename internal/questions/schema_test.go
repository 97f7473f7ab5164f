package questions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/termtext"
)

const langSet = `{"questions":[
 {"question":"Which language should we use?","header":"Language","options":[{"label":"Go","description":"static binary"},{"label":"TypeScript","description":"node runtime"}]},
 {"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Lint"},{"label":"Docs"},{"label":"CI, nightly"}]}
]}`

func mustSet(t testing.TB, s string) *QuestionSet {
	t.Helper()
	set, err := ParseQuestionSet([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestParseQuestionSetValid(t *testing.T) {
	set := mustSet(t, langSet)
	if len(set.Questions) != 2 || set.Questions[0].MultiSelect || !set.Questions[1].MultiSelect {
		t.Fatalf("got %+v", set)
	}
	if set.Questions[0].Options[0].Description != "static binary" {
		t.Fatalf("description lost: %+v", set.Questions[0])
	}
	// Four questions of four options each is the upper limit and valid.
	q := `{"question":"q?","header":"h%d","options":["a","b","c","d"]}`
	var qs []string
	for i := 0; i < 4; i++ {
		qs = append(qs, strings.Replace(q, "%d", string(rune('0'+i)), 1))
	}
	mustSet(t, `{"questions":[`+strings.Join(qs, ",")+`]}`)
}

func TestParseQuestionSetErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"questions":[]}`, "At least one question is required"},
		{`{}`, "At least one question is required"},
		{`{"questions":null}`, "At least one question is required"},
		{`{"questions":[{"question":"q","header":"h","options":[{"label":"a"},{"label":"b"}]},{"question":"q","header":"h","options":[{"label":"a"}]}]}`,
			"questions[1].options: at least 2 options are required"},
		{`{"questions":[{"question":"q","header":"h","options":["a","b","c","d","e"]}]}`, "questions[0].options: at most 4 options are allowed, got 5"},
		{`{"questions":[{"header":"h","options":["a","b"]}]}`, "questions[0].question: is required"},
		{`{"questions":[{"question":" ","header":"h","options":["a","b"]}]}`, "questions[0].question: must not be empty"},
		{`{"questions":[{"question":"q","header":"a very long header","options":["a","b"]}]}`, "questions[0].header: at most 12 characters are allowed, got 18"},
		{`{"questions":[{"prompt":"q","title":"h","options":["a","b"]}]}`, `questions[0].prompt: unknown field (did you mean "question"?)`},
		{`{"questions":[{"question":"q","header":"h","options":["a","A"]}]}`, `questions[0].options[1].label: duplicate of options[0] ("a")`},
		{`{"questions":[{"question":"q","header":"h","multiSelect":"yes","options":["a","b"]}]}`, "questions[0].multiSelect: expected true or false, got a string"},
		{`{"questions":[{"question":"q","header":"h","options":[{"label":1},{"label":"b"}]}]}`, "questions[0].options[0].label: expected a string, got a number"},
		{`{"questions":"x"}`, "questions: expected an array, got a string"},
		{`{"questions":[1,2,3,4,5]}`, "questions: at most 4 questions are allowed, got 5"},
		{`{"questions":[{"question":"q","header":"h","options":["a","b"]}],"extra":1}`, "extra: unknown field"},
		{`{"questions":[`, "invalid JSON"},
		{`"hello"`, "expected a JSON object with a \"questions\" array, got a string"},
	}
	for _, tt := range tests {
		_, err := ParseQuestionSet([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %q", tt.in, err, tt.want)
		}
	}
	// The documented message is reproduced alone, word for word.
	_, err := ParseQuestionSet([]byte(`{"questions":[]}`))
	if err.Error() != ErrNoQuestions {
		t.Errorf("got %q", err)
	}
}

// An unknown field's name is repeated in the error, and the error goes to a terminal (questions ask
// prints it on stderr): a control sequence or bidirectional override in the name is shown escaped.
func TestUnknownFieldNamesAreShownEscaped(t *testing.T) {
	q := `{"question":"q","header":"h","options":[{"label":"a"},{"label":"b"%s}]%s}`
	tests := []struct{ in, want string }{
		{`{"questions":[` + fmt.Sprintf(q, "", "") + `],"\u001b]0;PWNED\u0007":1}`, `\x1b]0;PWNED\x07: unknown field`},
		{`{"questions":[` + fmt.Sprintf(q, "", `,"x\u202eyz":1`) + `]}`, `questions[0].x\u202eyz: unknown field`},
		{`{"questions":[` + fmt.Sprintf(q, `,"a\nb":1`, "") + `]}`, `questions[0].options[1].a\x0ab: unknown field`},
	}
	for _, tt := range tests {
		_, err := ParseQuestionSet([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %q", tt.in, err, tt.want)
			continue
		}
		if msg := err.Error(); termtext.VisibleLine(msg) != msg {
			t.Errorf("the error carries characters a terminal acts on: %q", msg)
		}
	}
}

func TestAnswersFromSpecs(t *testing.T) {
	set := mustSet(t, langSet)
	got, err := AnswersFromSpecs(set, []string{"1=go", `Extras=Lint,CI\, nightly`}, []string{"2=also fuzzing"})
	if err != nil {
		t.Fatal(err)
	}
	checked, err := CheckAnswers(set, got)
	if err != nil {
		t.Fatal(err)
	}
	if checked[0].Selected[0] != "Go" || strings.Join(checked[1].Selected, "|") != "Lint|CI, nightly" || checked[1].Other != "also fuzzing" {
		t.Fatalf("got %+v", checked)
	}
	// A whole label with a comma is taken whole.
	if got, err := AnswersFromSpecs(set, []string{"2=CI, nightly"}, nil); err != nil || got[0].Selected[0] != "CI, nightly" {
		t.Fatalf("got %+v %v", got, err)
	}
	// An option's number (from 1) names it too; a label that is itself a number wins over a number.
	if got, err := AnswersFromSpecs(set, []string{"1=2", "2= 1 ,CI\\, nightly"}, nil); err != nil ||
		got[0].Selected[0] != "TypeScript" || strings.Join(got[1].Selected, "|") != "Lint|CI, nightly" {
		t.Fatalf("by number: %+v %v", got, err)
	}
	digits := mustSet(t, `{"questions":[{"question":"How many?","header":"Count","options":[{"label":"2"},{"label":"1"}]}]}`)
	if got, err := AnswersFromSpecs(digits, []string{"1=1"}, nil); err != nil || got[0].Selected[0] != "1" {
		t.Fatalf("a label that is a number: %+v %v", got, err)
	}
	bad := []struct {
		answers, others []string
		want            string
	}{
		{[]string{"1=Rust"}, nil, `unknown option "Rust"; accepted: a label ("Go", "TypeScript") or an option number from 1 to 2`},
		{[]string{"1=3"}, nil, `unknown option "3"; accepted: a label ("Go", "TypeScript") or an option number from 1 to 2`},
		{[]string{"1=0"}, nil, `unknown option "0"`},
		{[]string{"1=Go,TypeScript"}, nil, "is single-choice: give one label or option number, not 2"},
		{[]string{"3=Go"}, nil, "question 3 is out of range: the set has 2 question(s)"},
		{[]string{"0=Go"}, nil, "question 0 is out of range"},
		{[]string{"Nope=Go"}, nil, "no such question; the questions are 1 (Language), 2 (Extras)"},
		{[]string{"Go"}, nil, `invalid --answer "Go": expected N=VALUE`},
		{nil, []string{"1="}, "the free text is empty"},
	}
	for _, b := range bad {
		_, err := AnswersFromSpecs(set, b.answers, b.others)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v %v: got %v, want %q", b.answers, b.others, err, b.want)
		}
	}
	// Single-choice with a label and free text, and a missing answer, are refused by CheckAnswers.
	a, _ := AnswersFromSpecs(set, []string{"1=Go"}, []string{"1=or Rust"})
	if _, err := CheckAnswers(set, a); err == nil || !strings.Contains(err.Error(), "is single-choice") {
		t.Errorf("got %v", err)
	}
	a, _ = AnswersFromSpecs(set, []string{"1=Go"}, nil)
	if _, err := CheckAnswers(set, a); err == nil || !strings.Contains(err.Error(), "question 2 (Extras) has no answer") {
		t.Errorf("got %v", err)
	}
	// A multiple-choice question may be answered with nothing.
	a, _ = AnswersFromSpecs(set, []string{"1=Go", "2="}, nil)
	if _, err := CheckAnswers(set, a); err != nil {
		t.Errorf("got %v", err)
	}
}

func TestParseAnswersFile(t *testing.T) {
	set := mustSet(t, langSet)
	for _, in := range []string{
		`{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[],"other":"x"}]}`,
		`[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"other":"x"}]`,
	} {
		a, err := ParseAnswersFile([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CheckAnswers(set, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []string{``, `{"answers":[{"question":0}]}`, `{`, `{"answers":[]} x`} {
		if _, err := ParseAnswersFile([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	a, _ := ParseAnswersFile([]byte(`[{"questionIndex":5,"selected":["Go"]}]`))
	if _, err := CheckAnswers(set, a); err == nil || !strings.Contains(err.Error(), "answers[0].questionIndex: 5 is out of range") {
		t.Errorf("got %v", err)
	}
}

func TestResultText(t *testing.T) {
	set := mustSet(t, langSet)
	sess := &Session{ID: "x", Request: &Request{Questions: set.Questions}, Status: Status{Status: Completed, CallID: "c"},
		Answers: &Answers{Answers: []Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{}, Other: "it's \"fine\""}}}}
	want := "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n2. [Extras] Which extras?\n→ Other: \"it's \\\"fine\\\"\""
	if got := ResultOf(sess).Text(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	sess.Answers.Answers[1].Other = ""
	if got := ResultOf(sess).Text(); !strings.HasSuffix(got, "→ (no selection)") {
		t.Errorf("got %s", got)
	}
	rej := &Session{ID: "x", Status: Status{Status: Rejected, RejectionReason: "too early"}}
	if got := ResultOf(rej).Text(); got != "User rejected this question set.\n\nRejection reason: \"too early\"" {
		t.Errorf("got %q", got)
	}
	rej.Status.RejectionReason = ""
	if got := ResultOf(rej).Text(); got != "User rejected this question set.\n\nNo reason provided." {
		t.Errorf("got %q", got)
	}
}

func FuzzParseQuestionSet(f *testing.F) {
	f.Add([]byte(langSet))
	f.Add([]byte(`{"questions":[]}`))
	f.Add([]byte(`[{"question":"q","header":"h","options":["a","b"]}]`))
	f.Add([]byte(`{"questions":[{"prompt":"q","title":"h","options":[{"label":"a"},{"label":"a"}],"multiSelect":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := ParseQuestionSet(data)
		if err != nil {
			if set != nil {
				t.Fatal("a set and an error")
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			// The error is printed on terminals: nothing of the input in it may act on one.
			if msg := err.Error(); termtext.VisibleLine(msg) != msg {
				t.Fatalf("the error carries characters a terminal acts on: %q", msg)
			}
			return
		}
		// A valid set survives a round trip and respects every limit.
		if err := set.Validate(); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if n := len(set.Questions); n < MinQuestions || n > MaxQuestions {
			t.Fatalf("%d questions", n)
		}
		for _, q := range set.Questions {
			if n := len(q.Options); n < MinOptions || n > MaxOptions {
				t.Fatalf("%d options", n)
			}
		}
	})
}

func FuzzAnswerSpecs(f *testing.F) {
	f.Add("1=Go", "2=Lint,Docs", "2=free text")
	f.Add("Language=go", `Extras=CI\, nightly`, "1=x")
	f.Add("=", "9=", "x")
	set := mustSet(f, langSet)
	f.Fuzz(func(t *testing.T, a1, a2, o1 string) {
		answers, err := AnswersFromSpecs(set, []string{a1, a2}, []string{o1})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checked, err := CheckAnswers(set, answers)
		if err != nil {
			return
		}
		for _, a := range checked {
			q := set.Questions[a.QuestionIndex]
			for _, l := range a.Selected {
				if _, err := matchLabel(q, l); err != nil {
					t.Fatalf("accepted label %q not an option", l)
				}
			}
			if !q.MultiSelect && len(a.Selected) > 1 {
				t.Fatalf("several labels on a single-choice question: %v", a.Selected)
			}
		}
	})
}

func FuzzAnswersFile(f *testing.F) {
	f.Add([]byte(`{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"other":"x"}]}`))
	f.Add([]byte(`[{"questionIndex":-1}]`))
	set := mustSet(f, langSet)
	f.Fuzz(func(t *testing.T, data []byte) {
		answers, err := ParseAnswersFile(data)
		if err != nil {
			return
		}
		_, _ = CheckAnswers(set, answers)
	})
}
