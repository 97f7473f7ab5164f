package contextfiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/output"
)

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	return NewStore(filepath.Join(dir, "config")).WithHome(filepath.Join(dir, "home")), filepath.Join(dir, "work")
}

func TestResolveProfile(t *testing.T) {
	s, _ := newTestStore(t)
	got, err := s.ResolveProfile("")
	if err != nil || got != "default" {
		t.Fatalf("ResolveProfile(\"\") = %q, %v; want default", got, err)
	}
	if err := s.CreateProfile("work"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ResolveProfile("work"); err != nil || got != "work" {
		t.Fatalf("ResolveProfile(work) = %q, %v", got, err)
	}
	_, err = s.ResolveProfile("nope")
	if output.Code(err) != output.ExitNotFound {
		t.Fatalf("code = %d, want 4 (%v)", output.Code(err), err)
	}
	want := "Profile 'nope' does not exist. Available profiles: default, work"
	if err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
	if _, err := s.Switch("work", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ResolveProfile(""); got != "work" {
		t.Fatalf("active = %q, want work", got)
	}
	for _, bad := range []string{"../x", "a/b", "", ".hidden", strings.Repeat("a", 65)} {
		if _, err := s.ResolveProfile(bad); err == nil && bad != "" {
			t.Errorf("ResolveProfile(%q) accepted", bad)
		}
	}
}

func TestPromptBlock(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "docs", "a.md"), "alpha\n")
	write(t, filepath.Join(cwd, "docs", "sub", "b.md"), "beta")
	write(t, filepath.Join(cwd, "docs", "c.txt"), "not matched")
	write(t, filepath.Join(cwd, "bin.md"), "x\x00y")
	if _, err := s.Add(context.Background(), Target{Global: true}, []string{"docs/**/*.md", "bin.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	got, warnings, err := s.Prompt("default", cwd, 1000, "hello")
	if err != nil {
		t.Fatal(err)
	}
	want := "--- CONTEXT FILES BEGIN ---\n[" + filepath.Join(cwd, "docs", "a.md") + "]\nalpha\n\n[" +
		filepath.Join(cwd, "docs", "sub", "b.md") + "]\nbeta\n--- CONTEXT FILES END ---\n\nhello"
	if got != want {
		t.Fatalf("prompt:\n%s\nwant:\n%s", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "bin.md: binary or not UTF-8") {
		t.Fatalf("warnings = %q", warnings)
	}
}

func TestPromptNoFiles(t *testing.T) {
	s, cwd := newTestStore(t)
	got, warnings, err := s.Prompt("default", cwd, 1000, "hello")
	if err != nil || got != "hello" || len(warnings) != 0 {
		t.Fatalf("Prompt = %q, %q, %v", got, warnings, err)
	}
}

func TestBudgetDropsLargestFirst(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "big.md"), strings.Repeat("b", 400))  // 100 tokens
	write(t, filepath.Join(cwd, "mid.md"), strings.Repeat("m", 200))  // 50 tokens
	write(t, filepath.Join(cwd, "small.md"), strings.Repeat("s", 40)) // 10 tokens
	if _, err := s.Add(context.Background(), Target{Profile: "default"}, []string{"*.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	// The budget holds mid and small with their headers and the block's frame, not big.
	cost := func(name string, size int64) int64 { return EstimateTokens(fileBytes(filepath.Join(cwd, name), size)) }
	want := blockFrameTokens + cost("mid.md", 200) + cost("small.md", 40)
	rep, err := s.Collect("default", cwd, want, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) != 1 || filepath.Base(rep.Dropped[0].Path) != "big.md" || rep.TotalTokens != want {
		t.Fatalf("dropped = %+v, total %d", rep.Dropped, rep.TotalTokens)
	}
	if rep.Rules.Profile[0].Matches != 3 {
		t.Fatalf("matches = %d", rep.Rules.Profile[0].Matches)
	}
}

// TestBudgetCountsHeaders: many empty files with long names add nothing in content but a header
// each; the block sent stays within context.max_tokens, and the report and the warning count the
// files dropped the same way (issue: 50,000 such files sent 1.2M tokens under a budget of 1000).
func TestBudgetCountsHeaders(t *testing.T) {
	s, cwd := newTestStore(t)
	const files, budget = 400, 1000
	for i := range files {
		write(t, filepath.Join(cwd, "d", fmt.Sprintf("%03d-%s.md", i, strings.Repeat("n", 63))), "")
	}
	if _, err := s.Add(t.Context(), Target{Profile: "default"}, []string{"d/*.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Collect("default", cwd, budget, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) == 0 || len(rep.Files)+len(rep.Dropped) != files || rep.TotalTokens > budget {
		t.Fatalf("kept %d, dropped %d, total %d (budget %d)", len(rep.Files), len(rep.Dropped), rep.TotalTokens, budget)
	}
	const user = "hi"
	got, warnings, err := s.Prompt("default", cwd, budget, user)
	if err != nil {
		t.Fatal(err)
	}
	block := strings.TrimSuffix(got, user)
	if !strings.HasPrefix(block, BlockBegin+"\n") || !strings.HasSuffix(block, BlockEnd+"\n\n") {
		t.Fatalf("no block: %.200q", got)
	}
	if n := EstimateTokens(int64(len(block))); n > rep.TotalTokens || n > budget {
		t.Fatalf("block is ~%d tokens (%d bytes), report says %d, budget %d", n, len(block), rep.TotalTokens, budget)
	}
	if sent := strings.Count(block, "\n["); sent != len(rep.Files) {
		t.Fatalf("block holds %d files, report keeps %d", sent, len(rep.Files))
	}
	wantWarn := fmt.Sprintf("dropped %d files, largest first", len(rep.Dropped))
	if len(warnings) != 1 || !strings.Contains(warnings[0], wantWarn) {
		t.Fatalf("warnings = %q, want one with %q", warnings, wantWarn)
	}
	// Without the frame's room not one file fits: nothing is sent, every file is reported.
	rep, err = s.Collect("default", cwd, blockFrameTokens, ReportOptions{})
	if err != nil || len(rep.Files) != 0 || len(rep.Dropped) != files || rep.TotalTokens != 0 || rep.NeededTokens() <= blockFrameTokens {
		t.Fatalf("frame-only budget: %v, kept %d, dropped %d, total %d", err, len(rep.Files), len(rep.Dropped), rep.TotalTokens)
	}
}

// TestFileBytesCountsTheHeaderPromptWrites: fileBytes and the frame agree with the block Prompt
// writes, so a change to the header's form cannot leave the budget counting another one.
func TestFileBytesCountsTheHeaderPromptWrites(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "a.md"), "one\n")
	write(t, filepath.Join(cwd, "b.md"), "two")
	if _, err := s.Add(t.Context(), Target{Profile: "default"}, []string{"*.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Prompt("default", cwd, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	want := blockFrameBytes + fileBytes(filepath.Join(cwd, "a.md"), 4) + fileBytes(filepath.Join(cwd, "b.md"), 3)
	// fileBytes counts a blank line before each file and a line break after each: two more bytes
	// here than written (the first file has no blank line before it; a.md ends in a line break).
	if int64(len(got))+2 != want {
		t.Fatalf("block is %d bytes, fileBytes and the frame say %d: %q", len(got), want, got)
	}
}

func TestAddValidation(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "a.md"), "a")
	tg := Target{Global: true}
	_, err := s.Add(context.Background(), tg, []string{"a.md", "missing.md"}, AddOptions{Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), "Invalid path 'missing.md': Path '") || output.Code(err) != output.ExitNotFound {
		t.Fatalf("err = %v", err)
	}
	if rules, _ := s.Rules(tg); len(rules) != 0 {
		t.Fatalf("nothing should be written, got %q", rules)
	}
	_, err = s.Add(context.Background(), tg, []string{"*.go"}, AddOptions{Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), "No files found matching glob pattern '") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.Add(context.Background(), tg, []string{"a.md", "missing.md"}, AddOptions{Cwd: cwd, Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Add(context.Background(), tg, []string{"a.md"}, AddOptions{Cwd: cwd})
	if err == nil || err.Error() != "Path 'a.md' already exists in the context" {
		t.Fatalf("err = %v", err)
	}
}

// TestConcurrentAdds runs twenty Adds at once, each through its own lock file handle as separate
// processes would (the testscript context_concurrent does it with processes).
func TestConcurrentAdds(t *testing.T) {
	s, cwd := newTestStore(t)
	const n = 20
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{fmt.Sprintf("p%02d", i)}, AddOptions{Cwd: cwd, Force: true})
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rules, err := s.Rules(Target{Profile: DefaultProfile})
	if err != nil || len(rules) != n {
		t.Fatalf("rules = %q, %v; want %d", rules, err, n)
	}
}

func TestProfileLifecycle(t *testing.T) {
	s, cwd := newTestStore(t)
	if _, err := s.Switch("work", true); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(cwd, "w.md"), "w")
	if _, err := s.Add(context.Background(), Target{Profile: "work"}, []string{"w.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	if err := s.RenameProfile("work", "job"); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Active(); a != "job" {
		t.Fatalf("active after rename = %q", a)
	}
	got, _, err := s.Prompt("", cwd, 0, "q")
	if err != nil || !strings.Contains(got, "w.md]") {
		t.Fatalf("prompt for the renamed active profile: %q, %v", got, err)
	}
	if err := s.DeleteProfile("job"); output.Code(err) != output.ExitFailure {
		t.Fatalf("deleting the active profile: %v", err)
	}
	if _, err := s.Switch(DefaultProfile, false); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProfile("job"); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.Profiles(); len(names) != 1 || names[0] != DefaultProfile {
		t.Fatalf("profiles = %q", names)
	}
	if _, err := s.Add(context.Background(), Target{Profile: "job"}, []string{"w.md"}, AddOptions{Cwd: cwd}); output.Code(err) != output.ExitNotFound {
		t.Fatalf("add to a deleted profile: %v", err)
	}
}

// TestFileOverWholeBudgetIsNotReadWhole: a file whose size alone exceeds the budget is dropped after
// a look at its first block only; the NUL byte far into this one is never reached. A rule matching
// a multi-gigabyte file must not read it on every prompt.
func TestFileOverWholeBudgetIsNotReadWhole(t *testing.T) {
	s, cwd := newTestStore(t)
	write(t, filepath.Join(cwd, "huge.txt"), strings.Repeat("a", 200<<10)+"\x00")
	write(t, filepath.Join(cwd, "bin.md"), "\x00"+strings.Repeat("b", 400))
	write(t, filepath.Join(cwd, "ok.md"), "fine")
	if _, err := s.Add(context.Background(), Target{Profile: "default"}, []string{"huge.txt", "bin.md", "ok.md"}, AddOptions{Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Collect("default", cwd, 70, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) != 1 || filepath.Base(rep.Dropped[0].Path) != "huge.txt" || rep.Dropped[0].Bytes != 200<<10+1 ||
		len(rep.Skipped) != 1 || filepath.Base(rep.Skipped[0].Path) != "bin.md" || len(rep.Files) != 1 {
		t.Fatalf("dropped %+v, skipped %+v, files %+v", rep.Dropped, rep.Skipped, rep.Files)
	}
}
