package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// The two protocol generations the form reaches the person by: elicitation/create while the call
// waits (2025-11-25), and an input request the client answers and calls again with (2026-07-28).
var formProtocols = []string{"2025-11-25", "2026-07-28"}

// formServer connects a Go SDK client on protocol version that shows forms with form(), and returns
// the store the other ways answer through.
func formServer(t *testing.T, version string, env map[string]string, form func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *dirstore.Store, *syncBuffer) {
	t.Helper()
	a, st, logs := questionsApp(t, env)
	var opts *mcp.ClientOptions
	if form != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: form}
	}
	return mcptest.ConnectVersion(t, &mcpserver.Deps{App: a}, opts, version), st, logs
}

func askLang(t *testing.T, cs *mcp.ClientSession) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	if err != nil {
		t.Fatal(err)
	}
	return res, mcptest.Text(res)
}

// The person answers in the client's form; the result has the same shape as any other answer, and
// the form shows each question's options.
func TestQuestionsFormAnswers(t *testing.T) {
	t.Parallel()
	for _, version := range formProtocols {
		t.Run(version, func(t *testing.T) {
			var schema atomic.Value
			cs, st, _ := formServer(t, version, nil, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				data, _ := json.Marshal(r.Params.RequestedSchema)
				schema.Store(string(data))
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "Go", "q2": []any{"Docs"}, "q2_other": "and CI"}}, nil
			})
			res, text := askLang(t, cs)
			want := "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n2. [Extras] Which extras?\n→ Docs\n→ Other: \"and CI\""
			if res.IsError || text != want {
				t.Fatalf("%v %q", res.IsError, text)
			}
			s, _ := schema.Load().(string)
			if !strings.Contains(s, `"enum":["Go","TypeScript"]`) || !strings.Contains(s, `"type":"array"`) {
				t.Fatalf("form schema %s", s)
			}
			all, _ := st.List()
			if len(all) != 1 || all[0].Status.Status != questions.Completed || all[0].Status.Detached {
				t.Fatalf("sets %+v", all[0].Status)
			}
		})
	}
}

// An answer that does not fit (a label and free text for a single-choice question) shows the form
// again, saying what was wrong; declining rejects the set.
func TestQuestionsFormRetryAndDecline(t *testing.T) {
	t.Parallel()
	for _, version := range formProtocols {
		t.Run(version, func(t *testing.T) {
			var shown atomic.Int32
			var second atomic.Value
			cs, _, _ := formServer(t, version, nil, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if shown.Add(1) == 1 {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "Go", "q1_other": "Rust", "q2": []any{}}}, nil
				}
				second.Store(r.Params.Message)
				return &mcp.ElicitResult{Action: "decline"}, nil
			})
			res, text := askLang(t, cs)
			if res.IsError || text != "User rejected this question set.\n\nRejection reason: \"declined in the client's form\"" {
				t.Fatalf("%v %q", res.IsError, text)
			}
			if msg, _ := second.Load().(string); !strings.Contains(msg, "That answer did not fit: ") || !strings.Contains(msg, "is single-choice") {
				t.Fatalf("second form: %q", msg)
			}
		})
	}
}

// The form races an answer given another way (here the store's Answer, as `qkit questions answer`
// gives it): the first answer counts. On 2025-11-25 the form is still open when the terminal
// answers, and it is withdrawn; on 2026-07-28 the form's later answer is refused and the call
// returns the terminal's.
func TestQuestionsFormRacesTheTerminal(t *testing.T) {
	t.Parallel()
	for _, version := range formProtocols {
		t.Run(version, func(t *testing.T) {
			shown := make(chan struct{}, 1)
			release := make(chan struct{})
			withdrawn := make(chan struct{}, 1)
			cs, st, logs := formServer(t, version, nil, func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				shown <- struct{}{}
				select {
				case <-ctx.Done():
					withdrawn <- struct{}{}
					return nil, ctx.Err()
				case <-release:
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "TypeScript", "q2": []any{"Lint"}}}, nil
				}
			})
			done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
			<-shown
			s := nextPending(t, st)
			if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
				t.Fatal(err)
			}
			if version < "2026-07-28" {
				select {
				case <-withdrawn:
				case <-time.After(30 * time.Second):
					t.Fatal("the form was not withdrawn")
				}
			} else {
				close(release) // the form's answer comes back after the terminal's
			}
			r := <-done
			if r.err != nil || r.res.IsError || !strings.Contains(mcptest.Text(r.res), "→ Go — static binary") {
				t.Fatalf("%v %+v", r.err, r.res)
			}
			got, _ := st.Get(s.ID)
			if got.Answers == nil || got.Answers.Answers[0].Selected[0] != "Go" {
				t.Fatalf("stored %+v", got.Answers)
			}
			if strings.Contains(logs.String(), "could not be stored") {
				t.Fatalf("log:\n%s", logs.String())
			}
		})
	}
}

// Closing the form without an answer (cancel) leaves the other ways open: the call waits on.
func TestQuestionsFormCancelledKeepsWaiting(t *testing.T) {
	t.Parallel()
	for _, version := range formProtocols {
		t.Run(version, func(t *testing.T) {
			closed := make(chan struct{}, 1)
			cs, st, _ := formServer(t, version, nil, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				closed <- struct{}{}
				return &mcp.ElicitResult{Action: "cancel"}, nil
			})
			done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
			<-closed
			var s *questions.Session
			for deadline := time.Now().Add(30 * time.Second); s == nil; time.Sleep(5 * time.Millisecond) {
				if all, _ := st.List(); len(all) == 1 && all[0].Status.Status == questions.Pending {
					s = all[0] // a call waits on it (not detached)
				}
				if time.Now().After(deadline) {
					t.Fatal("no call waits on the set after the form was closed")
				}
			}
			if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || r.res.IsError || !strings.Contains(mcptest.Text(r.res), "→ Docs") {
				t.Fatalf("%v %+v", r.err, r.res)
			}
		})
	}
}

// questions.via store never shows the form; questions.via elicitation refuses a client without one.
func TestQuestionsVia(t *testing.T) {
	t.Parallel()
	var shown atomic.Bool
	cs, st, _ := formServer(t, "2025-11-25", map[string]string{"QKIT_QUESTIONS_VIA": "store"}, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown.Store(true)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	})
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, st)
	if _, err := st.Answer(s.ID, goAndDocs, ""); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.res.IsError || shown.Load() {
		t.Fatalf("%v %+v, form shown %v", r.err, r.res, shown.Load())
	}

	cs, st, _ = formServer(t, "2025-11-25", map[string]string{"QKIT_QUESTIONS_VIA": "elicitation"}, nil)
	res, text := askLang(t, cs)
	if !res.IsError || !strings.HasPrefix(text, `questions.via is "elicitation" but this MCP client did not declare form elicitation`) {
		t.Fatalf("%v %q", res.IsError, text)
	}
	if all, _ := st.List(); len(all) != 0 {
		t.Fatal("a set was stored although the call was refused")
	}
}

// A forged request state can neither answer nor collect a set: the call is treated as a new one.
func TestQuestionsFormForgedState(t *testing.T) {
	t.Parallel()
	shown := make(chan struct{}, 1)
	cs, st, _ := formServer(t, "2026-07-28", nil, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown <- struct{}{}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	})
	victim, err := st.Create(mustLangSet(t), questions.CreateOptions{Source: "mcp", Detachable: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := askAsync(ctx, cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs,
		InputResponses: mcp.InputResponseMap{"answers": &mcp.ElicitResult{Action: "decline"}}, RequestState: victim.ID + ".00"})
	<-shown // the forged call got a form of its own
	cancel()
	<-done
	if got, _ := st.Get(victim.ID); got.Status.Status != questions.Pending {
		t.Fatalf("a forged state changed another set: %+v", got.Status)
	}
}

func mustLangSet(t *testing.T) *questions.QuestionSet {
	t.Helper()
	data, _ := json.Marshal(langArgs)
	set, err := questions.ParseQuestionSet(data)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
