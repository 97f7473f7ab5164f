package acpclient

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// starts counts the agent's runs that FAKEQ_RECORD saw.
func starts(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// agent.backend=auto probes an agent binary once, then uses what it learned without starting
// anything; --refresh-backend and a changed binary probe again.
func TestChooseBackendLearnsOnce(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "argv")
	self := fakeqtest.Use(t, "FAKEQ_RECORD="+record)
	// The agent command is a script, so the test can change "the binary" without touching its own.
	command := filepath.Join(dir, "kiro-cli")
	must(t, os.WriteFile(command, []byte("#!/bin/sh\nexec "+self+" \"$@\"\n"), 0o755))
	cache := BackendCacheFile(filepath.Join(dir, "state"))
	choose := func(refresh bool) BackendChoice {
		t.Helper()
		c, err := ChooseBackend(t.Context(), BackendAuto, command, cache, refresh, discard())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	if c := choose(false); c.Backend != BackendACP || !c.Probed || starts(t, record) != 1 {
		t.Fatalf("first: %+v, %d starts", c, starts(t, record))
	}
	for range 3 {
		if c := choose(false); c.Backend != BackendACP || c.Probed || !strings.HasPrefix(c.Reason, "learned ") {
			t.Fatalf("learned: %+v", c)
		}
	}
	if n := starts(t, record); n != 1 {
		t.Fatalf("the learned backend started the agent: %d starts", n)
	}

	// --refresh-backend probes again: now the agent has no ACP, and chat is learned.
	t.Setenv("FAKEQ_ACP_BAD", "exit")
	if c := choose(true); c.Backend != BackendChat || !c.Probed || starts(t, record) != 2 {
		t.Fatalf("refresh: %+v, %d starts", c, starts(t, record))
	}
	if c := choose(false); c.Backend != BackendChat || c.Probed || starts(t, record) != 2 {
		t.Fatalf("learned chat: %+v", c)
	}

	// An upgraded binary (another size or time) is probed again.
	t.Setenv("FAKEQ_ACP_BAD", "")
	must(t, os.WriteFile(command, []byte("#!/bin/sh\n# upgraded\nexec "+self+" \"$@\"\n"), 0o755))
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(command, later, later))
	if c := choose(false); c.Backend != BackendACP || !c.Probed || starts(t, record) != 3 {
		t.Fatalf("upgraded: %+v, %d starts", c, starts(t, record))
	}

	// acp and chat are taken as they are; a missing binary is chat, and nothing is learned of it.
	for _, s := range []string{BackendACP, BackendChat} {
		if c, err := ChooseBackend(t.Context(), s, command, cache, false, nil); err != nil || c.Backend != s || c.Probed {
			t.Errorf("%s: %+v %v", s, c, err)
		}
	}
	if c, err := ChooseBackend(t.Context(), BackendAuto, filepath.Join(dir, "missing"), cache, false, nil); err != nil || c.Backend != BackendChat || c.Probed {
		t.Errorf("missing: %+v %v", c, err)
	}
	if _, err := ChooseBackend(t.Context(), "soap", command, cache, false, nil); err == nil {
		t.Error("agent.backend=soap accepted")
	}
	if n := starts(t, record); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
}

// BenchmarkChooseBackendLearned is what agent.backend=auto costs each run once the backend is
// learned: find the binary, stat it, read the cache.
func BenchmarkChooseBackendLearned(b *testing.B) {
	dir := b.TempDir()
	self := fakeqtest.Use(b)
	cache := filepath.Join(dir, "agent-backend.json")
	if c, err := ChooseBackend(b.Context(), BackendAuto, self, cache, false, nil); err != nil || !c.Probed {
		b.Fatalf("%+v %v", c, err)
	}
	for b.Loop() {
		if c, err := ChooseBackend(b.Context(), BackendAuto, self, cache, false, nil); err != nil || c.Probed {
			b.Fatalf("%+v %v", c, err)
		}
	}
}

// LearnedBackend reports what auto would take without probing, and never writes the cache.
func TestLearnedBackendReadsOnly(t *testing.T) {
	dir := t.TempDir()
	self := fakeqtest.Use(t)
	command := filepath.Join(dir, "kiro-cli")
	must(t, os.WriteFile(command, []byte("#!/bin/sh\nexec "+self+" \"$@\"\n"), 0o755))
	cache := BackendCacheFile(filepath.Join(dir, "state"))

	if _, _, ok := LearnedBackend(cache, command); ok {
		t.Fatal("learned before any probe")
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("the cache was written: %v", err)
	}
	chosen, err := ChooseBackend(t.Context(), BackendAuto, command, cache, false, discard())
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(cache)
	must(t, err)
	c, at, ok := LearnedBackend(cache, command)
	if !ok || c.Backend != chosen.Backend || c.Probed || at.IsZero() || c.Reason != "learned "+at.Format(time.RFC3339) {
		t.Fatalf("learned: %+v at %v %v (chosen %+v)", c, at, ok, chosen)
	}
	if after, _ := os.ReadFile(cache); string(after) != string(before) {
		t.Fatal("LearnedBackend changed the cache")
	}
	// A changed binary has learned nothing yet; a missing one neither.
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(command, later, later))
	if _, _, ok := LearnedBackend(cache, command); ok {
		t.Error("a changed binary counts as learned")
	}
	if _, _, ok := LearnedBackend(cache, filepath.Join(dir, "nope")); ok {
		t.Error("a missing binary counts as learned")
	}
}

// What auto learned is not kept for good: a learned acp whose start fails (the agent no longer
// answers initialize) is forgotten by the run, whose error says the way out; "no ACP" holds for
// ChatTTL only; a probe that got no answer at all is not remembered.
func TestChooseBackendProbesAgain(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "argv")
	self := fakeqtest.Use(t, "FAKEQ_RECORD="+record)
	t.Setenv("HOME", t.TempDir())
	command := filepath.Join(dir, "q")
	must(t, os.WriteFile(command, []byte("#!/bin/sh\nexec "+self+" \"$@\"\n"), 0o755))
	state := filepath.Join(dir, "state")
	cache := BackendCacheFile(state)
	choose := func() BackendChoice {
		t.Helper()
		c, err := ChooseBackend(t.Context(), BackendAuto, command, cache, false, discard())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := choose(); c.Backend != BackendACP || !c.Probed {
		t.Fatalf("first: %+v", c)
	}
	// The same binary now has no acp (the fake as q 1.19.7, as README's third command runs it).
	t.Setenv("FAKEQ_FLAVOUR", "q")
	c := choose()
	if c.Backend != BackendACP || !c.Learned {
		t.Fatalf("learned: %+v", c)
	}
	_, err := Run(t.Context(), RunOptions{Limits: agent.Limits{Command: command, StateDir: state, Timeout: time.Minute}, Request: agent.Request{Prompt: "hi", Dir: dir}})
	if !c.Stale(err) {
		t.Fatalf("the failed start is not stale: %v", err)
	}
	for _, way := range []string{"--refresh-backend", "agent.backend"} {
		if !strings.Contains(err.Error(), way) {
			t.Errorf("the error names no %s: %v", way, err)
		}
	}
	n := starts(t, record)
	if c := choose(); c.Backend != BackendChat || !c.Probed || starts(t, record) != n+1 {
		t.Fatalf("after the failed start: %+v, %d starts", c, starts(t, record)-n)
	}
	// Chat is learned, for ChatTTL: within it no probe; past it, a new one.
	if c := choose(); c.Backend != BackendChat || !c.Learned {
		t.Fatalf("learned chat: %+v", c)
	}
	data, err := os.ReadFile(cache)
	must(t, err)
	old := time.Now().Add(-2 * ChatTTL).UTC().Format(time.RFC3339Nano)
	data = regexp.MustCompile(`"probed_at": "[^"]*"`).ReplaceAll(data, []byte(`"probed_at": "`+old+`"`))
	must(t, os.WriteFile(cache, data, 0o600))
	t.Setenv("FAKEQ_FLAVOUR", "")
	if c := choose(); c.Backend != BackendACP || !c.Probed {
		t.Fatalf("chat past its time: %+v", c)
	}
	if c := (BackendChoice{Backend: BackendACP}); c.Stale(&NotACPError{}) {
		t.Error("a choice made by a probe (or a setting) is not stale")
	}

	// No answer at all (a silent agent, past the probe's time): chat for this run, not remembered.
	t.Setenv("FAKEQ_ACP_BAD", "silent")
	backend, why, sure := probe(t.Context(), agent.Describe(command), 200*time.Millisecond, discard())
	if backend != BackendChat || sure || !strings.Contains(why, "not remembered") {
		t.Errorf("silent agent: %s %q sure=%v", backend, why, sure)
	}
}
