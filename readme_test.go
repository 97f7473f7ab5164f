package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/config"
)

// TestReadmeSettings: README's settings table has a row for every setting, with its default.
// A row may name several keys; `_key` after `questions.nats_tls_cert` is questions.nats_tls_key.
func TestReadmeSettings(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "| key | default | meaning |\n")
	if !ok {
		t.Fatal("README.md has no settings table (| key | default | meaning |)")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	code := regexp.MustCompile("`([^`]*)`")
	defaults := map[string]string{}
	for _, row := range strings.Split(table, "\n")[1:] {
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			t.Fatalf("not a table row: %q", row)
		}
		var last string
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") && last != "" {
				name = last[:strings.LastIndex(last, "_")] + name
			}
			defaults[name], last = strings.Trim(strings.TrimSpace(cells[2]), "`"), name
		}
	}
	for _, k := range config.Keys {
		d, ok := defaults[k.Name]
		switch {
		case !ok:
			t.Errorf("README.md's settings table has no row for %s", k.Name)
		case d != k.Default:
			t.Errorf("README.md gives %s the default %q, the setting has %q", k.Name, d, k.Default)
		}
		delete(defaults, k.Name)
	}
	for name := range defaults {
		t.Errorf("README.md's settings table has %s, which is no setting", name)
	}
}

// readmeBlock is one fenced code block of README.md, with the readme-test comment right before it.
type readmeBlock struct {
	line     int    // of the opening fence
	lang     string // sh, json, ...
	text     string
	skip     string // why the block does not run here
	exit     int    // the exit status the block must end with
	exitWhy  string
	hasMarks bool
}

// readmeMark is the HTML comment that says how the README test treats the block after it:
// <!-- readme-test: skip (why) --> or <!-- readme-test: exit N (why) -->.
var readmeMark = regexp.MustCompile(`^<!-- readme-test: (skip|exit (\d+)) \((.+)\) -->$`)

// readmeBlocks reads README.md's fenced code blocks in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			if strings.HasPrefix(lines[i], "<!-- readme-test:") && !readmeMark.MatchString(lines[i]) {
				t.Errorf("README.md:%d: %q is not <!-- readme-test: skip (why) --> or <!-- readme-test: exit N (why) -->", i+1, lines[i])
			}
			continue
		}
		b := readmeBlock{line: i + 1, lang: lang}
		if i > 0 {
			if m := readmeMark.FindStringSubmatch(lines[i-1]); m != nil {
				b.hasMarks = true
				if m[1] == "skip" {
					b.skip = m[3]
				} else {
					b.exit, _ = strconv.Atoi(m[2])
					b.exitWhy = m[3]
				}
			}
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("README.md:%d: the code block is not closed", b.line)
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// TestReadmeBlocksRun runs every shell block of README.md, in order, the way a new user would type
// them into one terminal: from a checkout (a folder holding the README, a git repository), with a
// fresh home, and with no q installed. Each block runs in bash with -e and pipefail; the folder and
// the exported variables carry over to the next block. The stand-ins: qkit on PATH is this test
// binary (installed, as far as the blocks can tell), and `make build` / `make fakeq` link it and
// the fake q into ./bin instead of compiling (the Makefile's own targets are what CI builds with).
// A block marked "readme-test: skip (why)" does not run and is reported; one marked
// "readme-test: exit N (why)" must exit N, and is reported too.
func TestReadmeBlocksRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the README's blocks run the agent stand-in many times")
	}
	qkit, err := exec.LookPath("qkit") // the test binary, registered by TestMain
	if err != nil {
		t.Fatal(err)
	}
	q, err := exec.LookPath("q")
	if err != nil {
		t.Fatal(err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the README's blocks run in a checkout")
	}
	root := t.TempDir()
	work := filepath.Join(root, "qkit")  // the checkout
	home := filepath.Join(root, "home")  // the user's home
	tools := filepath.Join(root, "path") // qkit, installed; make's stand-in
	for _, d := range []string{work, home, tools} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "README.md"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(qkit, filepath.Join(tools, "qkit")); err != nil {
		t.Fatal(err)
	}
	makeStandIn := `#!/bin/sh
# The README test's make: links the test binary's qkit and fake q where the Makefile builds them.
set -e
for target in "$@"; do
	case "$target" in
	build) mkdir -p bin && ln -sf "$README_TEST_QKIT" bin/qkit ;;
	fakeq) mkdir -p bin/fakeq && ln -sf "$README_TEST_Q" bin/fakeq/q && ln -sf "$README_TEST_Q" bin/fakeq/kiro-cli ;;
	*) echo "make $target: the README test runs only make build and make fakeq; mark the block readme-test: skip" >&2; exit 2 ;;
	esac
done
`
	if err := os.WriteFile(filepath.Join(tools, "make"), []byte(makeStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	// PATH without the folder TestMain put q in: a new user has no q.
	var system []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != filepath.Dir(q) && dir != filepath.Dir(qkit) {
			system = append(system, dir)
		}
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + tools + string(filepath.ListSeparator) + strings.Join(system, string(filepath.ListSeparator)),
		"README_TEST_QKIT=" + qkit,
		"README_TEST_Q=" + q,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"GIT_CONFIG_NOSYSTEM=1",
		"TMPDIR=" + t.TempDir(),
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "README"}} {
		c := exec.Command(git, args...)
		c.Dir, c.Env = work, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	state := filepath.Join(root, "state.sh")
	ran := 0
	for _, b := range readmeBlocks(t) {
		if b.lang != "sh" {
			if b.hasMarks {
				t.Errorf("README.md:%d: a readme-test mark on a %q block, which never runs", b.line, b.lang)
			}
			continue
		}
		if b.skip != "" {
			t.Logf("README.md:%d: skipped: %s", b.line, b.skip)
			continue
		}
		code, out := runReadmeBlock(t, b, work, env, state)
		ran++
		switch {
		case code != b.exit && b.exitWhy != "":
			t.Errorf("README.md:%d: the block exited %d, its mark expects %d (%s); if it is fixed, remove the mark.\n%s\n--- output ---\n%s", b.line, code, b.exit, b.exitWhy, b.text, out)
		case code != b.exit:
			t.Errorf("README.md:%d: the block exited %d:\n%s\n--- output ---\n%s", b.line, code, b.text, out)
		case b.exitWhy != "":
			t.Logf("README.md:%d: exited %d as its mark expects (%s):\n%s", b.line, code, b.exitWhy, out)
		}
	}
	if ran < 10 {
		t.Errorf("only %d shell blocks ran", ran)
	}
}

// runReadmeBlock runs one block in bash, in the folder and with the exported variables the blocks
// before it left in state, and saves them again for the next. It returns the exit status and what
// the block printed.
func runReadmeBlock(t *testing.T, b readmeBlock, dir string, env []string, state string) (int, string) {
	t.Helper()
	script := fmt.Sprintf(`set -e -o pipefail
if [ -f %[1]q ]; then . %[1]q; fi
trap 'code=$?; { export -p; printf "cd %%q\n" "$PWD"; } > %[1]q; exit $code' EXIT
%[2]s`, state, b.text)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", script)
	c.Dir, c.Env = dir, env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	// Whatever the block left running in the background is stopped with it.
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		t.Fatalf("README.md:%d: the block was still running after 2 minutes:\n%s\n--- output ---\n%s", b.line, b.text, out.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatalf("README.md:%d: bash: %v", b.line, err)
	}
	return 0, out.String()
}

// TestReadmeHelpTopicsExist: every `qkit help X` the README points to for details is a topic or
// command that qkit has.
func TestReadmeHelpTopicsExist(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	qkit, err := exec.LookPath("qkit")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile("`qkit help ([a-z-]+)`").FindAllStringSubmatch(string(data), -1)
	if len(refs) < 8 {
		t.Fatalf("README.md points to %d help topics", len(refs))
	}
	for _, m := range refs {
		c := exec.Command(qkit, "help", m[1])
		c.Env = append(os.Environ(), "HOME="+t.TempDir(), "QKIT_HOME="+t.TempDir())
		if out, err := c.CombinedOutput(); err != nil || len(out) < 200 {
			t.Errorf("qkit help %s: %v\n%s", m[1], err, out)
		}
	}
}
