package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

func TestParseModels(t *testing.T) {
	list, err := ParseModels([]byte(`{"models":[{"model_id":"auto","model_name":"Auto","description":"picks"},{"id":"claude-sonnet-4.5"},"claude-haiku-4.5"],"default_model":"auto"}`))
	want := ModelList{Default: "auto", Models: []Model{{ID: "auto", Name: "Auto", Description: "picks"}, {ID: "claude-sonnet-4.5"}, {ID: "claude-haiku-4.5"}}}
	if err != nil || !reflect.DeepEqual(list, want) {
		t.Fatalf("%+v %v", list, err)
	}
	if m, ok := list.Find("AUTO"); !ok || m.ID != "auto" {
		t.Fatal("no case-insensitive match by id")
	}
	if _, ok := list.Find("auto "); ok {
		t.Fatal("matched a different name")
	}
	for bad, want := range map[string]string{
		``:                 "reading the model list: unexpected end of JSON input",
		`[]`:               "reading the model list: json: cannot unmarshal array into Go value",
		`{"models":[]}`:    "reading the model list: it names no model",
		`{"models":[""]}`:  "reading the model list: it names no model",
		`{"models":[1]}`:   "reading the model list: a model is neither a name nor an object: 1",
		`{"models":[[2]]}`: "reading the model list: a model is neither a name nor an object: [2]",
		`null`:             "reading the model list: it names no model",
	} {
		if _, err := ParseModels([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", bad, err, want)
		}
	}
}

// The list is the agent's text, printed by ask --list-models and in the error of an unknown
// model: an id holding anything a terminal acts on, or a space, is left out (it could never be
// given back as --model), a default like it is dropped, and names and descriptions are made
// printable.
func TestParseModelsHostile(t *testing.T) {
	list, err := ParseModels([]byte(`{"models":[` +
		`{"model_id":"ev\u001b]0;PWNED\u0007il","description":"x"},"bad\u202eid","two words","tab\tid","c1\u009b2J",` +
		`{"model_id":"good","model_name":"Go\u001b[2Jod","description":"the \u001b]0;PWNED\u0007good\u202e model\r"},` +
		`" fine "],"default_model":"ev\u001b]0;PWNED\u0007il"}`))
	want := ModelList{Models: []Model{{ID: "good", Name: "Good", Description: "the good model"}, {ID: "fine"}}}
	if err != nil || !reflect.DeepEqual(list, want) {
		t.Fatalf("%+v %v, want %+v", list, err, want)
	}
	if err := CheckModel("kiro-cli", "nope", list, true); err == nil || strings.ContainsAny(err.Error(), "\x1b\x07\u202e") {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := ParseModels([]byte(`{"models":["a\u001bb","c d"]}`)); err == nil || err.Error() != "reading the model list: it names no model" {
		t.Errorf("a list of bad ids only: %v", err)
	}
}

func FuzzParseModels(f *testing.F) {
	f.Add([]byte(`{"models":[{"model_id":"auto"},"x"],"default_model":"auto"}`))
	f.Add([]byte(`{"models":[{"modelId":"a","name":"A"}]}`))
	f.Add([]byte(`{"models":[{"model_id":"a\u001b]0;x\u0007","description":"\u009b2J"},"b c","d"],"default_model":"e\u202e"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseModels(data)
		if err != nil {
			return
		}
		if len(list.Models) == 0 {
			t.Fatal("a list without models")
		}
		if list.Default != "" && !visibleToken(list.Default) {
			t.Fatalf("default %q is not a visible token", list.Default)
		}
		for _, m := range list.Models {
			if !visibleToken(m.ID) {
				t.Fatalf("model id %q is not a visible token: %+v", m.ID, list)
			}
			if Printable(m.Name) != m.Name || Printable(m.Description) != m.Description {
				t.Fatalf("model %+v holds text a terminal would act on", m)
			}
			if _, ok := list.Find(m.ID); !ok {
				t.Fatalf("%q not found in its own list", m.ID)
			}
		}
	})
}

func TestModelCache(t *testing.T) {
	l := flavour(t, "kiro")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := filepath.Join(t.TempDir(), "argv")
	t.Setenv("FAKEQ_RECORD", rec)
	c := ModelCache{File: filepath.Join(t.TempDir(), "state", "agent-models.json"), Now: func() time.Time { return now }}
	list, listed, err := c.Models(t.Context(), l.Command)
	if err != nil || !listed || list.Default != "auto" || len(list.Models) != 6 {
		t.Fatalf("%+v %v %v", list, listed, err)
	}
	if err := CheckModel(l.Command, "Claude-Sonnet-4.5", list, listed); err != nil {
		t.Fatal(err)
	}
	if err := CheckModel(l.Command, "claude-3.5-sonnet", list, listed); err == nil {
		t.Fatal("an unknown model passed")
	}
	// Fresh: no second run of the agent; stale after the TTL: asked again.
	c.Models(t.Context(), l.Command)
	if runs := countLines(t, rec); runs != 1 {
		t.Fatalf("%d runs, want 1 (cached)", runs)
	}
	now = now.Add(DefaultModelTTL + time.Second)
	c.Models(t.Context(), l.Command)
	if runs := countLines(t, rec); runs != 2 {
		t.Fatalf("%d runs, want 2 (stale)", runs)
	}
	// q has no --list-models: any model passes, and that answer is cached too.
	t.Setenv("FAKEQ_FLAVOUR", "q")
	now = now.Add(DefaultModelTTL + time.Second)
	list, listed, err = c.Models(t.Context(), l.Command)
	if err != nil || listed || CheckModel(l.Command, "anything", list, listed) != nil {
		t.Fatalf("q: %+v %v %v", list, listed, err)
	}
	if _, listed, _ = c.Models(t.Context(), l.Command); listed || countLines(t, rec) != 3 {
		t.Fatal("q's answer not cached")
	}
	// A missing binary is an error, and not cached.
	if _, _, err := c.Models(t.Context(), "qkit-no-such-agent"); !errors.As(err, new(*MissingCommandError)) {
		t.Fatalf("missing: %v", err)
	}
}

// A list cached before ParseModels left out hostile ids (or one written by hand) is not trusted:
// the agent is asked again, so what it prints has gone through the parser.
func TestModelCacheHostile(t *testing.T) {
	l := flavour(t, "kiro")
	rec := filepath.Join(t.TempDir(), "argv")
	t.Setenv("FAKEQ_RECORD", rec)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := ModelCache{File: filepath.Join(t.TempDir(), "agent-models.json"), Now: func() time.Time { return now }}
	for i, cached := range []ModelList{
		{Models: []Model{{ID: "auto"}, {ID: "ev\x1b]0;PWNED\x07il"}}},
		{Models: []Model{{ID: "auto"}, {ID: "two words"}}},
		{Models: []Model{{ID: "auto", Description: "the \x1b[2Jauto model"}}},
		{Models: []Model{{ID: "auto", Name: "A\u202euto"}}},
		{Models: []Model{{ID: "auto"}}, Default: "ev\x1b]0;PWNED\x07il"},
	} {
		data, err := json.Marshal(cachedModels{Command: l.Command, Fetched: now, Listed: true, List: cached})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.File, data, 0o600); err != nil {
			t.Fatal(err)
		}
		list, listed, err := c.Models(t.Context(), l.Command)
		if err != nil || !listed || len(list.Models) != 6 || list.Default != "auto" {
			t.Errorf("%+v: got %+v %v %v, want the agent's own list", cached, list, listed, err)
		}
		if runs := countLines(t, rec); runs != i+1 {
			t.Errorf("%+v: %d runs of the agent, want %d (the cache not trusted)", cached, runs, i+1)
		}
	}
	// What the agent's answer left in the cache is trusted.
	if _, _, err := c.Models(t.Context(), l.Command); err != nil || countLines(t, rec) != 5 {
		t.Errorf("the checked list was not cached: %v", err)
	}
}

func countLines(t *testing.T, file string) int {
	t.Helper()
	data, _ := os.ReadFile(file)
	n := 0
	for _, b := range data {
		if b == '\n' {
			n++
		}
	}
	return n
}

// TestModelChoicesOneRule: every front end checks a model the same way (acp serve used to compare
// ignoring case and ask exactly; with no list, one refused what the other passed on).
func TestModelChoicesOneRule(t *testing.T) {
	c := ModelCache{File: filepath.Join(t.TempDir(), "models.json")}
	choices, from := c.Choices(t.Context(), Limits{Command: "qkit-no-such-agent", Models: []string{"claude-sonnet-4"}})
	if from != ModelsFromSetting || CheckChoice("q", "Claude-Sonnet-4", choices, from) != nil {
		t.Fatalf("setting: %v %q", choices, from)
	}
	if err := CheckChoice("q", "gpt-9", choices, from); err == nil || err.Error() != `unknown model "gpt-9": available models are claude-sonnet-4 (the agent.models setting lists them)` {
		t.Fatalf("setting, unknown: %v", err)
	}
	if err := Validate(Limits{Command: "q", Models: []string{"claude-sonnet-4"}}, Request{Prompt: "p", Model: "CLAUDE-SONNET-4"}); err != nil {
		t.Fatalf("Validate takes what CheckChoice takes: %v", err)
	}
	// No setting and an agent that cannot be asked: any name is passed on.
	choices, from = c.Choices(t.Context(), Limits{Command: "qkit-no-such-agent"})
	if from != ModelsFromNone || CheckChoice("qkit-no-such-agent", "anything", choices, from) != nil {
		t.Fatalf("none: %v %q", choices, from)
	}
	// What is offered without a list is q's offline one, a copy; with one, its ids.
	if got := OfferedModels(choices, from); !slices.Equal(got, FallbackModels) || &got[0] == &FallbackModels[0] {
		t.Fatalf("offered, none: %v", got)
	}
	if got := OfferedModels(ModelList{Models: []Model{{ID: "a"}, {ID: "b"}}}, ModelsFromAgent); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("offered, agent: %v", got)
	}
	// FreshChoices asks again: the setting still decides first; an agent that cannot be started is
	// an error, not an empty list.
	if list, from, err := c.FreshChoices(t.Context(), Limits{Command: "qkit-no-such-agent", Models: []string{"m1"}}); err != nil || from != ModelsFromSetting || len(list.Models) != 1 {
		t.Fatalf("fresh, setting: %v %q %v", list, from, err)
	}
	if _, _, err := c.FreshChoices(t.Context(), Limits{Command: "qkit-no-such-agent"}); err == nil {
		t.Fatal("fresh, missing agent: no error")
	}
}

// An agent whose --list-models fails for another reason than not knowing the flag is an error with
// its exit status and stderr; one that does not know the flag (a usage error, or stderr naming the
// flag) or prints no list cannot list, and any model passes.
func TestListModelsFailures(t *testing.T) {
	var command string
	agent := func(body string) { // a new file each time: one being rewritten cannot be run
		t.Helper()
		command = filepath.Join(t.TempDir(), "kiro-cli")
		if err := os.WriteFile(command, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	agent("echo 'error: the service is unreachable' >&2\nexit 3\n")
	_, err := ListModels(t.Context(), command)
	if err == nil || err.Error() != "kiro-cli chat --list-models failed (exit status 3): error: the service is unreachable" {
		t.Fatalf("failed: %v", err)
	}
	agent("exit 1\n")
	if _, err = ListModels(t.Context(), command); err == nil || err.Error() != "kiro-cli chat --list-models failed (exit status 1)" {
		t.Fatalf("failed silently: %v", err)
	}
	for name, body := range map[string]string{
		"usage error":   "echo 'error: bad usage' >&2\nexit 2\n",
		"flag named":    "echo \"error: unexpected argument '--list-models' found\" >&2\nexit 1\n",
		"no list":       "echo 'Models: auto'\n",
		"an empty list": `echo '{"models":[]}'` + "\n",
	} {
		agent(body)
		if _, err := ListModels(t.Context(), command); !errors.Is(err, ErrCannotListModels) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestListModelsStopped: a model list the caller cancels (Ctrl-C, or a client that went away) is
// stopped with its whole process group, a grandchild holding its stdout too, and the error is the
// caller's cancellation, not the agent's failure to answer; one that outlasts its own timeout is
// that failure, its group stopped just the same.
func TestListModelsStopped(t *testing.T) {
	dir := t.TempDir()
	gcFile := filepath.Join(dir, "gc.pid")
	command := fakeqtest.Flavour(t, "kiro", "FAKEQ_LIST_GRANDCHILD="+gcFile, "FAKEQ_LIST_WAIT="+filepath.Join(dir, "never"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := ListModels(ctx, command)
		done <- err
	}()
	waitFile(t, gcFile)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("ListModels did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "did not answer") || errors.Is(err, ErrCannotListModels) {
		t.Fatalf("cancelled: %v", err)
	}
	gone(t, pidIn(t, gcFile))

	gcFile = filepath.Join(dir, "gc2.pid")
	t.Setenv("FAKEQ_LIST_GRANDCHILD", gcFile)
	go func() {
		_, _, _, err := query(t.Context(), command, "chat --list-models", time.Millisecond, "chat", "--list-models")
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the query did not return after its timeout")
	}
	if err == nil || !strings.HasSuffix(err.Error(), " chat --list-models did not answer within 1ms") {
		t.Fatalf("timed out: %v", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the agent's own timeout reads as the caller's stop: %v", err)
	}
	if _, err := os.Stat(gcFile); err == nil { // the fake may not have got as far as its grandchild
		gone(t, pidIn(t, gcFile))
	}
}

// A list that a signal ended (not qkit's) names the signal.
func TestListModelsKilled(t *testing.T) {
	command := filepath.Join(t.TempDir(), "kiro-cli")
	if err := os.WriteFile(command, []byte("#!/bin/sh\nkill -KILL $$\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ListModels(t.Context(), command); err == nil || err.Error() != "kiro-cli chat --list-models failed (terminated by SIGKILL)" {
		t.Fatalf("killed: %v", err)
	}
}

func pidIn(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	pid, aerr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || aerr != nil {
		t.Fatalf("pid file %s: %q %v", file, data, err)
	}
	return pid
}
