package structured_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/structured"
	"github.com/qkit-cli/qkit/internal/structured/schema"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`

func mustCompile(t testing.TB, s string) *structured.Schema {
	t.Helper()
	sch, err := schema.Compile([]byte(s), "test")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func TestCompactSchemaInPrompt(t *testing.T) {
	sch, err := schema.Load("{ \"type\" :\n \"object\" }", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := sch.Prompt("List the users\n")
	want := "List the users\n\n--- ANSWER FORMAT ---\n"
	if !strings.HasPrefix(p, want) || !strings.Contains(p, "JSON Schema:\n{\"type\":\"object\"}\n--- END ANSWER FORMAT ---") || !strings.HasSuffix(p, "--- END ANSWER FORMAT ---") {
		t.Fatalf("prompt:\n%s", p)
	}
}

func TestExtract(t *testing.T) {
	for _, c := range []struct {
		name, reply, want, err string
	}{
		{name: "bare", reply: "  {\"a\": 1}\n", want: `{"a": 1}`},
		{name: "bare array", reply: "[1,2]", want: "[1,2]"},
		{name: "bare string is a document", reply: `"yes"`, want: `"yes"`},
		{name: "fenced", reply: "Here it is:\n```json\n{\"a\": 1}\n```\nDone.", want: `{"a": 1}`},
		{name: "fenced upper case tag", reply: "```JSON\n[1]\n```", want: "[1]"},
		{name: "tilde fence", reply: "~~~json\n{}\n~~~", want: "{}"},
		{name: "untagged fence with an object", reply: "```\n{\"a\":1}\n```", want: `{"a":1}`},
		{name: "other language ignored", reply: "```go\nx := 1\n```\n```json\n{\"b\":2}\n```", want: `{"b":2}`},
		{name: "unclosed fence runs to the end", reply: "```json\n{\"c\":3}\n", want: `{"c":3}`},
		{name: "longer fence holds a shorter one", reply: "````json\n{\"s\":\"```\"}\n````", want: "{\"s\":\"```\"}"},
		{name: "indented fence", reply: "   ```json\n   {\"d\":4}\n   ```", want: `{"d":4}`},
		{name: "one valid one broken json block", reply: "```json\n{\"a\":\n```\n```json\n{\"a\":1}\n```", want: `{"a":1}`},
		{name: "two blocks", reply: "```json\n{\"a\":1}\n```\n```json\n{\"a\":2}\n```", err: "the reply holds 2 JSON documents (fenced blocks); give exactly one"},
		{name: "none", reply: "I cannot answer that.", err: "no JSON found: the reply is neither a JSON document alone nor holds one in a ```json fenced block"},
		{name: "empty", reply: "", err: "no JSON found"},
		{name: "prose around bare JSON", reply: "Sure: {\"a\":1}", err: "no JSON found"},
		{name: "broken json block", reply: "```json\n{\"a\": }\n```", err: "the ```json block in the reply is not valid JSON: invalid character '}'"},
		{name: "inline code is not a fence", reply: "```json {\"a\":1}```", err: "no JSON found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := structured.Extract(c.reply)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Extract = %q, %v; want error %q", got, err, c.err)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("Extract = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	sch := mustCompile(t, personSchema)
	if err := sch.Validate([]byte(`{"name":"Ada","age":36}`)); err != nil {
		t.Fatalf("valid: %v", err)
	}
	err := sch.Validate([]byte(`{"name":7,"age":-1,"x":true}`))
	var ve *structured.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("invalid: %v", err)
	}
	// The first problem, at its place in the document (properties in name order).
	if len(ve.Problems) != 1 || ve.Problems[0] != `at "/age": -1 is less than the minimum 0` {
		t.Errorf("problems: %q", ve.Problems)
	}
	for doc, want := range map[string]string{
		`{"name":7,"age":3}`:              `at "/name": 7 is an integer; the schema wants a string`,
		`{"name":"Ada","age":3,"x":true}`: `at "/x": the property "x" is not allowed (additionalProperties is false)`,
		`{"name":"Ada"}`:                  `at "": the required property "age" is missing`,
		`{"name":"Ada","age":1.5}`:        `at "/age": 1.5 is a number; the schema wants an integer`,
		`{"name":"Ada","age":"36"}`:       `at "/age": "36" is a string; the schema wants an integer`,
		`[{"name":"Ada"}]`:                `at "": [{"name":"Ada"}] is an array; the schema wants an object`,
	} {
		if err := sch.Validate([]byte(doc)); err == nil || err.Error() != "the JSON does not match the schema: "+want {
			t.Errorf("%s: %v, want %s", doc, err, want)
		}
	}
}

// TestValidateExplains: each keyword's problem names its place in the document as a JSON pointer
// and shows the value as JSON, cut when long; where qkit cannot tell the place, the validator's
// message stands at the root.
func TestValidateExplains(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, c := range []struct{ schema, doc, want string }{
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":3}}}}`, `{"tags":["ab","abcd"]}`,
			`at "/tags/1": "abcd" has 4 characters, more than maxLength 3`},
		{`{"properties":{"a/b":{"properties":{"m~n":{"const":{"k":1}}}}}}`, `{"a/b":{"m~n":{"k":2}}}`,
			`at "/a~1b/m~0n": {"k":2} is not the const value {"k":1}`},
		{`{"properties":{"s":{"enum":["a","b"]}}}`, `{"s":"` + long + `"}`,
			`at "/s": "` + strings.Repeat("x", 79) + `… is not one of the enum values ["a","b"]`},
		{`{"properties":{"o":{"type":"string"}}}`, `{"o":{"k":[1,true,null]}}`, `at "/o": {"k":[1,true,null]} is an object; the schema wants a string`},
		{`{"prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`, `[1,"a",2]`, `at "/2": 2 is an integer; the schema wants a string`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"integer"}],"additionalItems":false}`, `[1,2]`, `at "/1": 2 is not allowed here (the schema is false)`},
		{`{"$ref":"#/$defs/p","$defs":{"p":{"type":"object","required":["id"]}}}`, `{}`, `at "": the required property "id" is missing`},
		{`{"patternProperties":{"^n":{"type":"number"}},"additionalProperties":{"type":"boolean"}}`, `{"n1":1,"z":"no"}`, `at "/z": "no" is a string; the schema wants a boolean`},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, `at "": true is valid against none of the 2 schemas of anyOf (the first says: at "": true is a boolean; the schema wants a string)`},
		{`{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `3`, `at "": 3 is valid against the schemas 0 and 1 of oneOf; exactly one must accept it`},
		{`{"not":{"type":"null"}}`, `null`, `at "": null is valid against the schema under not`},
		{`{"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a":1}`, `at "": the required property "b" is missing`},
		{`{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, `at "": the property "b" is required when "a" is present`},
		{`{"uniqueItems":true}`, `[1,2,1]`, `at "": items 0 and 2 are equal (uniqueItems)`},
		{`{"contains":{"type":"string"},"minContains":2}`, `["a",1]`, `at "": 1 items are valid against contains, fewer than 2`},
		{`{"type":"array","minItems":2}`, `[1]`, `at "": the array has 1 items, fewer than minItems 2`},
		{`{"multipleOf":0.5,"exclusiveMaximum":10}`, `10`, `at "": 10 is not less than 10 (exclusiveMaximum)`},
		{`{"pattern":"^a"}`, `"b"`, `at "": "b" does not match the pattern "^a"`},
		{`{"propertyNames":{"maxLength":2}}`, `{"abc":1}`, `at "/abc": the property name "abc" is not valid against propertyNames`},
		// A keyword explain does not follow: the validator's message, at the root.
		{`{"type":"object","unevaluatedProperties":false}`, `{"a":1}`, `at "": not: validated against <anonymous schema>`},
	} {
		err := mustCompile(t, c.schema).Validate([]byte(c.doc))
		var ve *structured.ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0] != c.want {
			t.Errorf("%s against %s: %v, want %s", c.doc, c.schema, err, c.want)
		}
	}
}

// script is a Send that replies from a list, records the prompts and can report credits.
type script struct {
	replies []string
	credits []float64
	budget  *structured.Budget
	prompts []string
	err     error
}

func (s *script) send(_ context.Context, prompt string, attempt int) (string, error) {
	s.prompts = append(s.prompts, prompt)
	i := min(attempt-1, len(s.replies)-1)
	if i < len(s.credits) {
		if err := s.budget.AddCredits(s.credits[i]); err != nil {
			return s.replies[i][:len(s.replies[i])/2], errors.New("stopped") // a cancelled turn keeps what arrived
		}
	}
	return s.replies[i], s.err
}

func TestAsk(t *testing.T) {
	sch := mustCompile(t, personSchema)
	ctx := context.Background()

	t.Run("valid first answer", func(t *testing.T) {
		s := &script{replies: []string{"```json\n{\"name\":\"Ada\",\"age\":36}\n```"}}
		var seen []structured.Attempt
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 2, OnAttempt: func(a structured.Attempt) { seen = append(seen, a) }})
		if err != nil || string(res.Output) != `{"name":"Ada","age":36}` || len(s.prompts) != 1 || len(seen) != 1 || !seen[0].Valid {
			t.Fatalf("res %+v err %v prompts %d seen %+v", res, err, len(s.prompts), seen)
		}
		if !strings.HasPrefix(s.prompts[0], "Who?\n\n--- ANSWER FORMAT ---") {
			t.Errorf("first prompt %q", s.prompts[0])
		}
	})

	t.Run("fixed by a retry", func(t *testing.T) {
		s := &script{replies: []string{`{"name":"Ada"}`, "no JSON today", `{"name":"Ada","age":36}`}}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 2})
		if err != nil || string(res.Output) != `{"name":"Ada","age":36}` || len(res.Attempts) != 3 {
			t.Fatalf("res %+v err %v", res, err)
		}
		want := "Your previous reply was not the JSON asked for:\n- at \"\": the required property \"age\" is missing\nAnswer again with one JSON document"
		if !strings.HasPrefix(s.prompts[1], want) {
			t.Errorf("retry prompt %q, want prefix %q", s.prompts[1], want)
		}
		if !strings.Contains(s.prompts[2], "- no JSON found") {
			t.Errorf("second retry prompt %q", s.prompts[2])
		}
	})

	t.Run("never valid", func(t *testing.T) {
		s := &script{replies: []string{`{"name":1,"age":1}`}}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 1})
		var nv *structured.NoValidAnswerError
		if !errors.As(err, &nv) || nv.Attempts != 2 || res.Output != nil || res.Reply != `{"name":1,"age":1}` || len(s.prompts) != 2 {
			t.Fatalf("res %+v err %v", res, err)
		}
		if want := `no valid JSON after 2 answers (--schema-retries): the last one: at "/name": 1 is an integer; the schema wants a string`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	})

	t.Run("no retries", func(t *testing.T) {
		s := &script{replies: []string{"prose"}}
		_, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch})
		if err == nil || !strings.HasPrefix(err.Error(), "no valid JSON after 1 answer (") || len(s.prompts) != 1 {
			t.Fatalf("err %v prompts %d", err, len(s.prompts))
		}
	})

	t.Run("send error is returned as is", func(t *testing.T) {
		boom := errors.New("agent failed")
		s := &script{replies: []string{"partial"}, err: boom}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 2})
		if err != boom || res.Reply != "partial" || len(s.prompts) != 1 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})

	t.Run("max turns stops the retry", func(t *testing.T) {
		b := &structured.Budget{MaxTurns: 2}
		s := &script{replies: []string{"prose"}}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 5, Budget: b})
		var be *structured.BudgetError
		if !errors.As(err, &be) || be.Kind != "turns" || len(s.prompts) != 2 || res.Reply != "prose" {
			t.Fatalf("res %+v err %v prompts %d", res, err, len(s.prompts))
		}
		if turns, _ := b.Used(); turns != 2 {
			t.Errorf("turns %d", turns)
		}
		if want := "budget exceeded: --max-turns 2 allows 2 prompts, and another was needed; what arrived was kept"; err.Error() != want {
			t.Errorf("message %q", err)
		}
	})

	t.Run("max credits stops the turn", func(t *testing.T) {
		b := &structured.Budget{MaxCredits: 1}
		s := &script{replies: []string{`{"name":1}`, `{"name":"Ada","age":3}`}, credits: []float64{0.75, 0.5}, budget: b}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Schema: sch, Retries: 5, Budget: b})
		var be *structured.BudgetError
		if !errors.As(err, &be) || be.Kind != "credits" || be.Used != 1.25 || len(s.prompts) != 2 || res.Reply != `{"name":"Ad` || res.Output != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
		if want := "budget exceeded: the agent reported 1.25 credits, over --max-credits 1; the turn was stopped and what arrived was kept"; err.Error() != want {
			t.Errorf("message %q", err)
		}
	})

	t.Run("without a schema the prompt goes once, unchanged", func(t *testing.T) {
		s := &script{replies: []string{"prose"}}
		res, err := structured.Ask(ctx, "Who?", s.send, structured.Options{Retries: 2, Budget: &structured.Budget{MaxTurns: 1}})
		if err != nil || res.Reply != "prose" || len(s.prompts) != 1 || s.prompts[0] != "Who?" {
			t.Fatalf("res %+v err %v prompts %q", res, err, s.prompts)
		}
	})
}

func TestRetryPromptCapsProblems(t *testing.T) {
	var many []string
	for range 25 {
		many = append(many, "at \"/\": x")
	}
	p := structured.RetryPrompt(many)
	if strings.Count(p, "\n- at") != 20 || !strings.Contains(p, "- ... and 5 more\n") {
		t.Fatalf("retry prompt:\n%s", p)
	}
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	if err := structured.CheckOutputFile(filepath.Join(dir, "missing", "out.json")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
	if err := structured.CheckOutputFile(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	out := filepath.Join(dir, "out.json")
	os.WriteFile(out, []byte("old"), 0o644)
	if err := structured.WriteOutputFile(out, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "{}\n" {
		t.Errorf("file holds %q", b)
	}
	if err := structured.WriteOutputFile(filepath.Join(dir, "gone", "x.json"), []byte("{}")); err == nil {
		t.Errorf("wrote into a missing directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); err == nil {
		t.Errorf("the missing directory was created")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A problem quotes the agent's JSON (a value, a property name), and reaches stderr and the final
// error: the control characters it holds come out visible (as JSON escapes, or termtext's), never
// as themselves.
func TestValidateProblemsAreVisible(t *testing.T) {
	sch := mustCompile(t, `{"properties":{"a":{"enum":["x"]}},"additionalProperties":false}`)
	for doc, want := range map[string]string{
		`{"a":"\u001b]0;PWNED\u0007"}`:            `at "/a": "\u001b]0;PWNED\u0007" is not one of the enum values ["x"]`,
		`{"a":"x","b\u001b[2J\u009b31m\u202e":1}`: `the property "b\u001b[2J\u009b31m\u202e" is not allowed`,
		`{"a":"a\tb"}`: `at "/a": "a\tb" is not one of`,
	} {
		err := sch.Validate([]byte(doc))
		var ve *structured.ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 {
			t.Fatalf("%s: %v", doc, err)
		}
		if p := ve.Problems[0]; !strings.Contains(p, want) || strings.ContainsAny(p, "\x1b\x07\n\t\u009b\u202e") {
			t.Errorf("%s: problem %q, want it to hold %q and no control character", doc, p, want)
		}
	}
}
