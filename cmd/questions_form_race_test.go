//go:build unix

package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// The protocol generations the assistant's form reaches the person by: elicitation/create while
// the call waits, and an input request the client answers and calls again with.
var formVersions = []string{"2025-11-25", "2026-07-28"}

// The call's result for each answer: the same shape whichever way the answer came.
const (
	goAndDocsText = "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n2. [Extras] Which extras?\n→ Docs"
	tsAndLintText = "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ TypeScript — node runtime\n\n2. [Extras] Which extras?\n→ Lint"
)

// heldForm is a client's form that says when it is shown and answers TypeScript and Lint once
// released; withdrawn by the server, it returns.
type heldForm struct {
	shown, release chan struct{}
}

func newHeldForm() *heldForm {
	return &heldForm{shown: make(chan struct{}, 1), release: make(chan struct{})}
}

func (f *heldForm) handle(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	select {
	case f.shown <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.release:
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "TypeScript", "q2": []any{"Lint"}}}, nil
	}
}

// formCall connects a Go SDK client with form to an MCP server whose state is under home, and
// calls ask_user_questions with the terminal tests' set; the channel gets the result.
func formCall(t *testing.T, home, version string, form *heldForm) <-chan *mcp.CallToolResult {
	t.Helper()
	a := mcptest.NewApp(t, map[string]string{"QKIT_HOME": home})
	cs := mcptest.ConnectVersion(t, &mcpserver.Deps{App: a}, &mcp.ClientOptions{ElicitationHandler: form.handle}, version)
	var args map[string]any
	if err := json.Unmarshal([]byte(ttySet), &args); err != nil {
		t.Fatal(err)
	}
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "call failed: " + err.Error()}}}
		}
		out <- res
	}()
	return out
}

func callText(t *testing.T, results <-chan *mcp.CallToolResult) string {
	t.Helper()
	select {
	case res := <-results:
		if res.IsError {
			t.Fatalf("the call failed: %s", mcptest.Text(res))
		}
		return mcptest.Text(res)
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
	}
	return ""
}

// cliAnswer runs `qkit questions answer ARGS...` in-process, as from a shell, on QKIT_HOME.
func cliAnswer(args ...string) (code int, stdout, stderr string) {
	streams, _, out, errOut := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	code = Run(context.Background(), a, append([]string{"questions", "answer"}, args...))
	return code, out.String(), errOut.String()
}

// The client's form races `qkit questions answer` (the command itself, not the store's Answer):
// the first answer counts, the call returns it in the usual shape, and the command that came second
// exits 1 saying the set was already answered, its --json showing the set as answered. Each order is
// forced once, then both go at the same moment.
func TestQuestionsFormRacesTheAnswerCommand(t *testing.T) {
	for _, version := range formVersions {
		for _, order := range []string{"command first", "form first", "together"} {
			t.Run(version+"/"+order, func(t *testing.T) {
				home := t.TempDir()
				t.Setenv("QKIT_HOME", home)
				for _, v := range []string{"QKIT_CONFIG", "QKIT_LOG_LEVEL", "QKIT_QUESTIONS_TIMEOUT", "QKIT_QUESTIONS_VIA"} {
					t.Setenv(v, "")
				}
				st, err := dirstore.New(filepath.Join(home, "state", "questions"), questions.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				form := newHeldForm()
				results := formCall(t, home, version, form)
				<-form.shown
				s := pendingSet(t, st)
				answer := []string{s.ID[:8], "--answer", "1=Go", "--answer", "2=Docs", "--json"}

				var code int
				var stdout, stderr, text string
				switch order {
				case "command first":
					code, stdout, stderr = cliAnswer(answer...)
					close(form.release) // on 2025-11-25 the form was withdrawn; on 2026-07-28 its answer comes late
					text = callText(t, results)
				case "form first":
					close(form.release)
					text = callText(t, results)
					code, stdout, stderr = cliAnswer(answer...)
				case "together":
					type cli struct {
						code           int
						stdout, stderr string
					}
					ran := make(chan cli, 1)
					go func() {
						c, o, e := cliAnswer(answer...)
						ran <- cli{c, o, e}
					}()
					close(form.release)
					text = callText(t, results)
					r := <-ran
					code, stdout, stderr = r.code, r.stdout, r.stderr
				}

				got, err := st.Get(s.ID)
				if err != nil || got.Status.Status != questions.Completed || got.Answers == nil {
					t.Fatalf("stored: %+v %v", got, err)
				}
				stored := got.Answers.Answers[0].Selected[0]
				switch {
				case code == 0:
					if order == "form first" || text != goAndDocsText || stored != "Go" {
						t.Fatalf("the command won, but the call returned %q and the store holds %q", text, stored)
					}
					if !strings.Contains(stdout, `"status": "completed"`) || !strings.Contains(stdout, `"Go"`) {
						t.Fatalf("answer --json: %s", stdout)
					}
				case code == output.ExitFailure:
					if order == "command first" || text != tsAndLintText || stored != "TypeScript" {
						t.Fatalf("the form won, but the call returned %q and the store holds %q", text, stored)
					}
					if !strings.Contains(stderr, "was already answered (completed)") {
						t.Fatalf("the command's message: %q", stderr)
					}
					if !strings.Contains(stdout, `"status": "completed"`) || !strings.Contains(stdout, `"TypeScript"`) {
						t.Fatalf("answer --json after losing: %s", stdout)
					}
				default:
					t.Fatalf("answer exited %d: %s", code, stderr)
				}
			})
		}
	}
}

// The form wins while a `questions wait` terminal walks the person through the set: the call gets
// the form's answer in the usual shape, and when the person submits, the terminal says the set was
// answered elsewhere first and that their answers were not sent; the stored answer stays the form's.
func TestQuestionsFormWinsWhileATerminalWalks(t *testing.T) {
	for _, version := range formVersions {
		t.Run(version, func(t *testing.T) {
			home := t.TempDir()
			tm, tty := newTerm(t)
			a, st := ttyAppIn(t, home, tty)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			code := make(chan int, 1)
			go func() { code <- Run(ctx, a, []string{"questions", "wait", "--once"}) }()
			tm.expect("Waiting for questions")
			form := newHeldForm()
			results := formCall(t, home, version, form)
			<-form.shown
			tm.expect("[1/2 Language] Which language should we use?")
			tm.expect("Reject this question set…")
			s := pendingOrClaimed(t, st)
			if s.Status.Status != questions.InProgress {
				t.Fatalf("the terminal has not taken the set: %+v", s.Status)
			}

			close(form.release)
			if text := callText(t, results); text != tsAndLintText {
				t.Fatalf("the call returned %q", text)
			}

			tm.send(keyEnter) // Go
			tm.expect("Other (type your own answer)")
			tm.send(keyEnter) // no extras
			tm.expect("Submit these answers")
			tm.send(keyEnter)
			tm.expect("✗ Question set " + s.ShortID() + " was answered elsewhere first; your answers were not sent.")
			got, err := st.Get(s.ID)
			if err != nil || got.Answers == nil || got.Answers.Answers[0].Selected[0] != "TypeScript" {
				t.Fatalf("stored: %+v %v", got, err)
			}
			cancel()
			if c := <-code; c != output.ExitInterrupted {
				t.Fatalf("wait exited %d", c)
			}
		})
	}
}
