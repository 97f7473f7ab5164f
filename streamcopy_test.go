package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/streamjson/streamjsontest"
)

// streamCopiesEnv names the folder in which every run of the testscripts' qkit with
// --output-format stream-json leaves a copy of its stdout. The script's end validates each copy
// against the schema (checkStreamCopies), so no script can produce stream-json that goes
// unchecked: validate-stream is for a file a script wants to look at, or to see refused.
const streamCopiesEnv = "QKIT_TEST_STREAM_COPIES"

// runQkit is the testscripts' qkit: cmd.Main, with stdout copied for checkStreamCopies when the
// run writes stream-json and the script set streamCopiesEnv.
func runQkit(args []string) int {
	dir := os.Getenv(streamCopiesEnv)
	if dir == "" || !streamJSONRun(args) {
		return cmd.Main(args)
	}
	f, err := os.CreateTemp(dir, "run-*.jsonl")
	if err != nil {
		fmt.Fprintf(os.Stderr, "qkit (testscripts): keeping a copy of stdout: %v\n", err)
		return 1
	}
	defer f.Close()
	if err := os.WriteFile(sidecar(f.Name(), ".args"), []byte(strings.Join(args, " ")), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "qkit (testscripts): %v\n", err)
		return 1
	}
	s := app.System()
	s.Out = &stdoutCopy{File: os.Stdout, copy: f}
	return cmd.MainStreams(s, args)
}

// streamJSONRun says whether args ask for stream-json output.
func streamJSONRun(args []string) bool {
	for i, a := range args {
		if a == "--output-format=stream-json" || a == "--output-format" && i+1 < len(args) && args[i+1] == "stream-json" {
			return true
		}
		if a == "--" {
			return false
		}
	}
	return false
}

// stdoutCopy writes to the real stdout (whose Fd it keeps, for prompts on a terminal) and copies
// what got through. When the reader has gone (… | head), the copy is marked cut and not checked:
// the run stops writing there, by design.
type stdoutCopy struct {
	*os.File
	mu   sync.Mutex
	copy *os.File
	cut  bool
}

func (c *stdoutCopy) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.File.Write(p)
	_, _ = c.copy.Write(p[:n])
	if err != nil && !c.cut {
		c.cut = true
		_ = os.WriteFile(sidecar(c.copy.Name(), ".cut"), nil, 0o644)
	}
	return n, err
}

func sidecar(copyPath, ext string) string { return strings.TrimSuffix(copyPath, ".jsonl") + ext }

// checkStreamCopies validates every copy in dir: each line against the schema, the result last.
// A run that wrote nothing (refused before it started) or whose reader went away is left out.
func checkStreamCopies(dir string) error {
	copies, err := filepath.Glob(filepath.Join(dir, "run-*.jsonl"))
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range copies {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := os.Stat(sidecar(p, ".cut")); len(data) == 0 || err == nil {
			continue
		}
		if _, err := streamjsontest.ValidateStream(data); err != nil {
			args, _ := os.ReadFile(sidecar(p, ".args"))
			errs = append(errs, fmt.Errorf("the stream-json of qkit %s is not valid: %w", args, err))
		}
	}
	return errors.Join(errs...)
}

// TestStreamCopies: what runQkit copies is checked, an invalid stream fails with the command line
// that wrote it, and runs that wrote nothing or lost their reader are left out.
func TestStreamCopies(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"ask", "--output-format", "stream-json", "hi"}, true},
		{[]string{"ask", "--output-format=stream-json", "hi"}, true},
		{[]string{"ask", "--json", "hi"}, false},
		{[]string{"ask", "--", "--output-format", "stream-json"}, false},
	} {
		if got := streamJSONRun(c.args); got != c.want {
			t.Errorf("streamJSONRun(%q) = %v", c.args, got)
		}
	}

	dir := t.TempDir()
	write := func(name, text string, cut bool) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.WriteFile(sidecar(f.Name(), ".args"), []byte("ask --output-format stream-json "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, name+".stdout"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if cut {
			out.Close() // the reader went away: the write fails
		}
		c := &stdoutCopy{File: out, copy: f}
		_, _ = c.Write([]byte(text))
	}
	valid := `{"type":"message","text":"hi\n"}` + "\n" +
		`{"type":"result","backend":"acp","stop_reason":"end_turn","output":"hi\n","exit_code":0,"agent_exit_code":0,"duration_ms":1,"tools":[]}` + "\n"
	write("run-valid", valid, false)
	write("run-empty", "", false)
	write("run-cut", `{"type":"message","text":"hi\n"}`+"\n", true)
	if err := checkStreamCopies(dir); err != nil {
		t.Fatalf("valid, empty and cut copies: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run-valid.stdout")); string(b) != valid {
		t.Errorf("stdout got %q", b)
	}
	write("run-noresult", `{"type":"message","text":"hi\n"}`+"\n", false)
	write("run-extra", `{"type":"message","text":"hi\n","extra":1}`+"\n", false)
	err := checkStreamCopies(dir)
	for _, want := range []string{"the stream-json of qkit ask --output-format stream-json run-noresult is not valid", "run-extra is not valid: line 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
