package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	spaced := filepath.Join(t.TempDir(), "My Tools", "q")
	if err := os.MkdirAll(filepath.Dir(spaced), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spaced, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		kind    Kind
		program string
		args    []string
		name    string
	}{
		{"q", KindQ, "q", []string{"acp"}, "q"},
		{"/usr/local/bin/kiro-cli", KindKiro, "/usr/local/bin/kiro-cli", []string{"acp"}, "kiro-cli"},
		{"my-q-wrapper", KindQ, "my-q-wrapper", []string{"acp"}, "my-q-wrapper"},
		{spaced, KindQ, spaced, []string{"acp"}, "q"}, // a path with a space, unquoted, is one program
		{`"` + spaced + `"`, KindQ, spaced, []string{"acp"}, "q"},
		{"goose acp", KindACP, "goose", []string{"acp"}, "goose acp"},
		{"npx @zed-industries/claude-code-acp", KindACP, "npx", []string{"@zed-industries/claude-code-acp"}, "npx @zed-industries/claude-code-acp"},
		{"  gemini --experimental-acp ", KindACP, "gemini", []string{"--experimental-acp"}, "gemini --experimental-acp"},
		{`/opt/agents/run "with space" --acp`, KindACP, "/opt/agents/run", []string{"with space", "--acp"}, "run with space --acp"},
		{`broken "quote`, KindQ, `broken "quote`, []string{"acp"}, `broken "quote`},
	} {
		d := Describe(c.command)
		if d.Kind != c.kind || d.Program != c.program || !reflect.DeepEqual(d.Args, c.args) || d.Name() != c.name {
			t.Errorf("%q: %+v (name %q)", c.command, d, d.Name())
		}
	}
}

// The built-in agents take kiro's launch flags, answer whoami and list their models; an ACP agent
// given as a command line gets none of that, and is worded neutrally.
func TestDescriptionOfAnACPAgent(t *testing.T) {
	kiro, goose := Describe("kiro-cli"), Describe("goose acp")
	if got := kiro.ACPArgv("dev", "auto", true, []string{"shell", "git/status"}); !reflect.DeepEqual(got,
		[]string{"kiro-cli", "acp", "--agent", "dev", "--model", "auto", "-a", "--trust-tools=shell,@git/status"}) {
		t.Errorf("kiro: %q", got)
	}
	if got := goose.ACPArgv("dev", "auto", true, []string{"shell"}); !reflect.DeepEqual(got, []string{"goose", "acp"}) {
		t.Errorf("goose: %q", got)
	}
	if goose.HasChat() || goose.WhoamiArgs() != nil || goose.ListModelsArgs() != nil || goose.LoginMethod() != "" || goose.LaunchFlags() {
		t.Errorf("goose: %+v", goose)
	}
	if !kiro.HasChat() || kiro.WhoamiArgs() == nil || kiro.ListModelsArgs() == nil || kiro.LoginMethod() != "kiro-login" {
		t.Errorf("kiro: %+v", kiro)
	}
	for _, s := range []string{goose.LoginHint(), (&LoginError{Command: "goose acp"}).Error(), (&MissingCommandError{Command: "goose acp"}).Error(),
		(&NoChatError{Agent: goose}).Error()} {
		if strings.Contains(strings.ToLower(s), "kiro") || !strings.Contains(s, "goose") {
			t.Errorf("not neutral, or not naming the agent: %s", s)
		}
	}
	if !strings.Contains((&NoChatError{Agent: goose}).Error(), "agent.backend") {
		t.Error("the chat refusal names no way out")
	}
	// No whoami, no model list: nothing is run (the program does not even exist).
	none := "no-such-program-qkit acp"
	if login, err := CheckLogin(context.Background(), none, nil); err != nil || !login.LoggedIn || login.Method != NotChecked {
		t.Errorf("login: %+v %v", login, err)
	}
	if _, err := ListModels(context.Background(), none); !errors.Is(err, ErrCannotListModels) {
		t.Errorf("models: %v", err)
	}
	var noChat *NoChatError
	if _, err := Stream(context.Background(), Limits{Command: none}, Request{Prompt: "hi"}, nil); !errors.As(err, &noChat) {
		t.Errorf("chat run of an ACP agent: %v", err)
	}
}

func FuzzDescribe(f *testing.F) {
	for _, s := range []string{"q", "kiro-cli", "goose acp", `a "b c" d`, `x "y`, "  ", "npx @zed-industries/claude-code-acp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		d := Describe(command)
		argv := d.ACPArgv("a", "m", true, []string{"t"})
		if len(argv) == 0 || argv[0] != d.Program {
			t.Fatalf("%q: argv %q, program %q", command, argv, d.Program)
		}
		if d.Kind == KindACP && (len(argv) != 1+len(d.Args) || d.HasChat()) {
			t.Fatalf("%q: an ACP agent given flags or chat: %q", command, argv)
		}
		if strings.TrimSpace(command) != "" && d.Program == "" {
			t.Fatalf("%q: no program", command)
		}
		_ = d.Name()
		_ = d.LoginHint()
	})
}
