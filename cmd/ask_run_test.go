package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
	"github.com/qkit-cli/qkit/internal/output"
)

// agentApp returns an App on buffers whose agent is the fake (fakeqtest.Flavour, with env as its
// knobs), loaded with set ("key=value") as --set overrides, QKIT_HOME in a temporary folder.
func agentApp(t *testing.T, flavour string, env []string, set ...string) (*app.App, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	t.Setenv("QKIT_HOME", t.TempDir())
	for _, v := range []string{"AGENT_TIMEOUT", "AGENT_MAX_RESPONSE_SIZE", "ENABLE_ADDITIONAL_TOOLS", "QKIT_CONFIG", "QKIT_INTERNAL_TRUSTED", "GOMEMLIMIT"} {
		t.Setenv(v, "")
	}
	overrides := map[string]string{"agent.command": fakeqtest.Flavour(t, flavour, env...)}
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		overrides[k] = v
	}
	streams, in, out, errOut := app.Test()
	a := app.New(streams, app.VersionInfo{Version: "test"})
	if err := a.Load(config.LoadOptions{Overrides: overrides}, ""); err != nil {
		t.Fatal(err)
	}
	return a, in, out, errOut
}

// askOpts are ask's options as the command line leaves them without flags but those given here.
func askOpts(edit func(*askOptions)) *askOptions {
	o := &askOptions{noContext: true, events: askEventOptions{outputFormat: formatText}}
	if edit != nil {
		edit(o)
	}
	return o
}

// TestAskRunChat drives ask through runAsk on the chat backend: the reply on stdout as text and
// in the --json object, the prompt from stdin, a dry run, and an interrupted run (exit 130).
func TestAskRunChat(t *testing.T) {
	a, in, out, errOut := agentApp(t, "q", []string{`FAKEQ_OUTPUT=first line\nsecond line\n`}, "agent.backend=chat")
	if err := runAsk(t.Context(), a, askOpts(nil), []string{"hello"}); err != nil || out.String() != "first line\nsecond line\n" {
		t.Fatalf("text: %v %q (stderr %q)", err, out.String(), errOut.String())
	}
	out.Reset()
	if err := runAsk(t.Context(), a, askOpts(func(o *askOptions) { o.asJSON = true }), []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	var got askEventsJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Output != "first line\nsecond line\n" || got.Backend != "chat" || got.StopReason != "end_turn" || got.Tools == nil {
		t.Fatalf("--json: %v %s", err, out.String())
	}

	// The prompt from stdin (no argument, stdin not a terminal) reaches the agent.
	t.Setenv("FAKEQ_OUTPUT", "")
	t.Setenv("FAKEQ_ECHO_PROMPT", "1")
	in.WriteString("from stdin\n")
	out.Reset()
	if err := runAsk(t.Context(), a, askOpts(nil), nil); err != nil || !strings.Contains(out.String(), "from stdin") {
		t.Fatalf("stdin prompt: %v %q", err, out.String())
	}

	out.Reset()
	if err := runAsk(t.Context(), a, askOpts(func(o *askOptions) { o.dryRun = true; o.model = "m1" }), []string{"hi"}); err != nil ||
		!strings.Contains(out.String(), "chat --no-interactive --model m1 <prompt>\n\nhi\n") {
		t.Fatalf("--dry-run: %v %q", err, out.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := runAsk(ctx, a, askOpts(nil), []string{"hello"}); output.Code(err) != output.ExitInterrupted {
		t.Fatalf("cancelled: %v (exit %d)", err, output.Code(err))
	}
}

// TestAskRunACP: on the acp backend the --json object names the backend and the agent's session.
func TestAskRunACP(t *testing.T) {
	a, _, out, errOut := agentApp(t, "kiro", []string{"FAKEQ_OUTPUT=over acp"}, "agent.backend=acp")
	if err := runAsk(t.Context(), a, askOpts(func(o *askOptions) { o.asJSON = true }), []string{"hello"}); err != nil {
		t.Fatalf("%v (stderr %q)", err, errOut.String())
	}
	var got askEventsJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Backend != "acp" || got.SessionID == "" || !strings.Contains(got.Output, "over acp") {
		t.Fatalf("--json on acp: %v %s", err, out.String())
	}
}

// TestAskRunUsageErrors: what ask refuses before it starts anything, with exit 2 and its message.
func TestAskRunUsageErrors(t *testing.T) {
	record := filepath.Join(t.TempDir(), "argv.jsonl")
	a, _, out, _ := agentApp(t, "q", []string{"FAKEQ_RECORD=" + record}, "agent.backend=chat")
	for _, tc := range []struct {
		name string
		opts *askOptions
		args []string
		want string
	}{
		{"output format", askOpts(func(o *askOptions) { o.events.outputFormat = "yaml" }), []string{"hi"},
			`invalid --output-format "yaml": expected text, json or stream-json`},
		{"json and stream-json", askOpts(func(o *askOptions) {
			o.asJSON, o.events.outputFormat, o.events.formatSet = true, formatStreamJSON, true
		}), []string{"hi"}, "--json and --output-format stream-json contradict each other: --json is --output-format json"},
		{"deny with yolo on chat", askOpts(func(o *askOptions) { o.trustAll, o.events.denyTools = true, []string{"shell"} }), []string{"hi"},
			approval.ErrDenyWithTrustAll.Error()},
		{"session on chat", askOpts(func(o *askOptions) { o.events.session = "s1"; o.events.backend = "chat" }), []string{"hi"},
			"--session names no session qkit stored, so it is the agent's own ACP session: it needs the acp backend, not chat"},
		{"session and resume", askOpts(func(o *askOptions) { o.events.session, o.resume = "s1", true }), []string{"hi"},
			"--session and --resume contradict each other: --session loads the session it names, --resume this directory's last one; give one"},
		{"dry run as stream-json", askOpts(func(o *askOptions) { o.dryRun, o.events.outputFormat = true, formatStreamJSON }), []string{"hi"},
			"--dry-run runs nothing, so it has no events for --output-format stream-json"},
		{"list-models with a prompt", askOpts(func(o *askOptions) { o.listModels = true }), []string{"hi"}, "--list-models takes no prompt"},
		{"empty prompt", askOpts(nil), []string{""}, "give it as an argument, or - to read it from stdin"},
		{"timeout", askOpts(func(o *askOptions) { o.timeout = "soon" }), []string{"hi"}, "invalid --timeout"},
		{"on-permission", askOpts(func(o *askOptions) { o.events.onPermission = "maybe" }), []string{"hi"},
			`invalid --on-permission "maybe": expected fail, deny or ask`},
	} {
		err := runAsk(t.Context(), a, tc.opts, tc.args)
		if output.Code(err) != output.ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (exit %d), want exit 2 and %q", tc.name, err, output.Code(err), tc.want)
		}
	}
	if out.Len() != 0 {
		t.Errorf("a refused ask printed %q", out.String())
	}
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused ask started the agent (%v)", err)
	}
}

// resultFails takes every write but the stream-json result line, as a reader that goes away after
// the events would.
type resultFails struct{ bytes.Buffer }

func (w *resultFails) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"type":"result"`)) {
		return 0, errors.New("broken pipe")
	}
	return w.Buffer.Write(b)
}

// TestAskRunResultWriteFails: a run whose events were written but whose result line could not be
// is a failure (exit 1) that says so, on both backends.
func TestAskRunResultWriteFails(t *testing.T) {
	for _, c := range []struct{ flavour, backend string }{{"kiro", "acp"}, {"q", "chat"}} {
		a, _, _, _ := agentApp(t, c.flavour, []string{"FAKEQ_OUTPUT=the reply"}, "agent.backend="+c.backend)
		w := &resultFails{}
		a.IO.Out = w
		err := runAsk(t.Context(), a, askOpts(func(o *askOptions) { o.events.outputFormat = formatStreamJSON }), []string{"hello"})
		if output.Code(err) != output.ExitFailure || err.Error() != "writing the result: broken pipe" {
			t.Errorf("%s: %v (exit %d), want exit 1 and writing the result: broken pipe", c.backend, err, output.Code(err))
		}
		if !strings.Contains(w.String(), `"type":"message"`) {
			t.Errorf("%s: the events before the result were not written: %q", c.backend, w.String())
		}
	}
}
