package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// TestMain lets the test binary act as the agent (fakeqtest.Use): the run-function tests of ask
// and the servers start it as agent.command. A run started through a link that has a knob file
// beside it (linkedAgent) first takes the file's variables.
func TestMain(m *testing.M) {
	if err := takeLinkedKnobs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fakeqtest.Main(m)
}

// linkedKnobs is the file beside a linked agent (linkedAgent) that holds its environment.
const linkedKnobs = "fakeq-knobs.json"

// linkedAgent returns an agent command for t that is the fake (as flavour, with env: "KEY=VALUE")
// without touching this process's environment, so that tests running side by side can each have
// their own knobs: a link to the test binary, under the binary's own name, in a folder of t's,
// beside a file of the variables that the started binary sets before it runs (TestMain).
func linkedAgent(t testing.TB, flavour string, env ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	vars, err := json.Marshal(append([]string{"FAKEQ_AS_Q=1", "FAKEQ_FLAVOUR=" + flavour}, env...))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, linkedKnobs), vars, 0o600); err != nil {
		t.Fatal(err)
	}
	return link
}

// takeLinkedKnobs sets the variables of the knob file beside the program as it was started
// (os.Args[0], a link linkedAgent made), if there is one.
func takeLinkedKnobs() error {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), linkedKnobs))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var vars []string
	if err := json.Unmarshal(b, &vars); err != nil {
		return fmt.Errorf("%s: %w", linkedKnobs, err)
	}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}
