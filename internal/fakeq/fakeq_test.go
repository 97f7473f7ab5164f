package fakeq

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary act as q: tests run os.Args[0] with FAKEQ_AS_Q=1.
func TestMain(m *testing.M) {
	if os.Getenv("FAKEQ_AS_Q") == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

func self(t *testing.T) string { t.Helper(); return os.Args[0] }

// testEnv is the environment of a fake run: no flavour or login variables from the caller.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKEQ_") && !strings.HasPrefix(kv, "KIRO_API_KEY=") && !strings.HasPrefix(kv, "AMAZON_Q_SIGV4=") && !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}
	return append(env, "FAKEQ_AS_Q=1")
}

func runFake(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runFakeIn(t, "", env, args...)
}

// runFakeIn runs the fake with stdin as its standard input.
func runFakeIn(t *testing.T, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Stdin = strings.NewReader(stdin)
	c.Env = append(testEnv(), env...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestRecordAndOutput(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "argv")
	out, _, code := runFake(t, []string{"FAKEQ_RECORD=" + rec, `FAKEQ_OUTPUT=a\nb\n`, "FAKEQ_LINES=2"}, "chat", "--no-interactive", "hi")
	if code != 0 || out != "a\nb\nline 1\nline 2\n" {
		t.Fatalf("code %d out %q", code, out)
	}
	data, _ := os.ReadFile(rec)
	var argv []string
	if err := json.Unmarshal(data, &argv); err != nil || strings.Join(argv, " ") != "chat --no-interactive hi" {
		t.Fatalf("argv %q (%v)", data, err)
	}
}

// TestStamps: the time just before the first line is written, and just after, in that order.
func TestStamps(t *testing.T) {
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	out, _, code := runFake(t, []string{"FAKEQ_LINES=2", "FAKEQ_BEFORE_STAMP=" + before, "FAKEQ_FIRST_STAMP=" + after}, "chat", "x")
	if code != 0 || out != "line 1\nline 2\n" {
		t.Fatalf("code %d out %q", code, out)
	}
	read := func(f string) int64 {
		data, err := os.ReadFile(f)
		n, perr := strconv.ParseInt(string(data), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			t.Fatalf("%s: %q (%v %v)", f, data, err, perr)
		}
		return n
	}
	if b, a := read(before), read(after); b > a {
		t.Fatalf("before %d is after after %d", b, a)
	}
}

func TestBytesAndAnsi(t *testing.T) {
	out, _, _ := runFake(t, []string{"FAKEQ_BYTES=200"}, "chat", "x")
	if len(out) != 200 {
		t.Fatalf("len %d", len(out))
	}
	out, _, _ = runFake(t, []string{"FAKEQ_ANSI=1", "FAKEQ_OUTPUT=hi"}, "chat", "x")
	if !strings.Contains(out, "\x1b[") {
		t.Fatalf("no ansi in %q", out)
	}
}

func TestApprovalAndWhoami(t *testing.T) {
	out, errOut, code := runFake(t, []string{"FAKEQ_APPROVAL_TOOL=fs_write"}, "chat", "--no-interactive", "x")
	if code != 1 || !strings.Contains(errOut, ApprovalError) {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if out != "Using tool: fs_write\n" {
		t.Fatalf("stdout %q, want the tool named", out)
	}
	_, _, code = runFake(t, []string{"FAKEQ_APPROVAL_TOOL=fs_write"}, "chat", "--trust-tools=fs_read,fs_write", "x")
	if code != 0 {
		t.Fatalf("trusted tool still refused: %d", code)
	}
	if _, _, code = runFake(t, nil, "whoami"); code != 0 {
		t.Fatal("whoami failed")
	}
	if _, _, code = runFake(t, []string{"FAKEQ_LOGGED_OUT=1"}, "whoami"); code != 1 {
		t.Fatal("logged-out whoami succeeded")
	}
}

func TestExitAndStderr(t *testing.T) {
	_, errOut, code := runFake(t, []string{"FAKEQ_EXIT=3", "FAKEQ_STDERR=boom"}, "chat", "x")
	if code != 3 || errOut != "boom" {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}
