package acpclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

func TestWithin(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "in")))
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{root, true},
		{filepath.Join(root, "a.txt"), true},
		{filepath.Join(root, "sub", "new", "deep.txt"), true},
		{filepath.Join(root, "in", "x"), true},
		{filepath.Join(root, "..", filepath.Base(outside), "x"), false},
		{filepath.Join(root, "out", "x"), false},
		{filepath.Join(root, "out"), false},
		{outside, false},
		{"/", false},
		// ACP asks for absolute paths; a relative one is taken in the session's folder, and
		// held to it like any other.
		{"relative.txt", true},
		{filepath.Join("sub", "new", "deep.txt"), true},
		{filepath.Join("in", "x"), true},
		{filepath.Join("..", filepath.Base(outside), "x"), false},
		{filepath.Join("out", "x"), false},
		{filepath.Join("sub", "..", "..", "x"), false},
	} {
		p, ok := Within(root, c.path)
		if ok != c.ok {
			t.Errorf("%s: %v, want %v", c.path, ok, c.ok)
		}
		if ok && !filepath.IsAbs(p) {
			t.Errorf("%s: inside, but %q is not absolute", c.path, p)
		}
	}
}

func FuzzWithin(f *testing.F) {
	root := f.TempDir()
	f.Add("/etc/passwd")
	f.Add(root + "/../x")
	f.Add(root + "/a/./b/../../..")
	f.Fuzz(func(t *testing.T, p string) {
		clean, ok := Within(root, p)
		if ok {
			rel, err := filepath.Rel(root, clean)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("%q (%q) taken as inside %s", p, clean, root)
			}
		}
	})
}

func TestDirFiles(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\nthree\n"), 0o640))
	var refused []string
	d := &DirFiles{Root: root, OnRefused: func(e *OutsideError) { refused = append(refused, e.Op+" "+e.Path) }}
	ctx := t.Context()
	r, err := d.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "f.txt")})
	if err != nil || r.Content != "one\ntwo\nthree\n" {
		t.Fatalf("%q %v", r.Content, err)
	}
	line, limit := 2, 1
	r, err = d.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "f.txt"), Line: &line, Limit: &limit})
	if err != nil || r.Content != "two\n" {
		t.Errorf("line 2: %q %v", r.Content, err)
	}
	if _, err := d.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: filepath.Join(root, "f.txt"), Content: "new"}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(root, "f.txt"))
	if data, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(data) != "new" || fi.Mode().Perm() != 0o640 {
		t.Errorf("%q %v", data, fi.Mode())
	}
	_, err = d.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: "/etc/hostname"})
	var re *acp.RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "outside the working directory") {
		t.Errorf("outside read: %v", err)
	}
	_, err = d.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: filepath.Join(root, "..", "x.txt"), Content: "x"})
	if err == nil {
		t.Error("outside write accepted")
	}
	if len(refused) != 2 || !strings.HasPrefix(refused[0], "read /etc/hostname") {
		t.Errorf("refused %q", refused)
	}
	_, err = d.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "missing.txt")})
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Errorf("missing: %v", err)
	}
}

// A dangling link inside the working directory that points outside it: writing through it (or
// into a folder it names) never creates anything outside; reading through it is refused.
func TestDirFilesDanglingLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must(t, os.Symlink(filepath.Join(outside, "target.txt"), filepath.Join(root, "file-link")))
	must(t, os.Symlink(filepath.Join(outside, "newdir"), filepath.Join(root, "dir-link")))
	d := &DirFiles{Root: root}
	ctx := t.Context()
	_, _ = d.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: filepath.Join(root, "file-link"), Content: "x"})
	_, _ = d.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: filepath.Join(root, "dir-link", "f.txt"), Content: "x"})
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the working directory: %v", entries)
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret-link")))
	if r, err := d.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "secret-link")}); err == nil || r.Content != "" {
		t.Errorf("read through a link to outside: %q %v", r.Content, err)
	}
}

func TestDirTerminals(t *testing.T) {
	root := t.TempDir()
	d := &DirTerminals{Root: root}
	defer d.Close()
	ctx := t.Context()
	limit := 8
	c, err := d.CreateTerminal(ctx, acp.CreateTerminalRequest{Command: "sh", Args: []string{"-c", "pwd; echo 0123456789; exit 3"}, OutputByteLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	w, err := d.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{TerminalId: c.TerminalId})
	if err != nil || w.ExitCode == nil || *w.ExitCode != 3 {
		t.Fatalf("%+v %v", w, err)
	}
	o, err := d.TerminalOutput(ctx, acp.TerminalOutputRequest{TerminalId: c.TerminalId})
	if err != nil || o.Output != "3456789\n" || !o.Truncated || o.ExitStatus == nil {
		t.Errorf("%+v %v", o, err)
	}
	if _, err := d.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{TerminalId: c.TerminalId}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TerminalOutput(ctx, acp.TerminalOutputRequest{TerminalId: c.TerminalId}); err == nil {
		t.Error("a released terminal still answers")
	}
	// A running command is killed (with its group), its output kept.
	c, err = d.CreateTerminal(ctx, acp.CreateTerminalRequest{Command: "sh", Args: []string{"-c", "echo started; sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.KillTerminal(ctx, acp.KillTerminalRequest{TerminalId: c.TerminalId}); err != nil {
		t.Fatal(err)
	}
	w, err = d.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{TerminalId: c.TerminalId})
	if err != nil || w.Signal == nil {
		t.Errorf("killed: %+v %v", w, err)
	}
	outside := "/"
	if _, err := d.CreateTerminal(ctx, acp.CreateTerminalRequest{Command: "true", Cwd: &outside}); err == nil {
		t.Error("a terminal outside the working directory was started")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRefusals: what DirFiles and DirTerminals refuse is collected, from any goroutine, and fails
// the run with an error naming every path and the working directory.
func TestRefusals(t *testing.T) {
	var r Refusals
	if r.Err() != nil || len(r.Paths()) != 0 {
		t.Fatalf("nothing refused: %v %v", r.Err(), r.Paths())
	}
	root := t.TempDir()
	d := &DirFiles{Root: root, OnRefused: r.Add}
	terms := &DirTerminals{Root: root, OnRefused: r.Add}
	defer terms.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = d.ReadTextFile(context.Background(), acp.ReadTextFileRequest{Path: "/etc/passwd"})
	}()
	go func() {
		defer wg.Done()
		cwd := "/"
		_, _ = terms.CreateTerminal(context.Background(), acp.CreateTerminalRequest{Command: "true", Cwd: &cwd})
	}()
	wg.Wait()
	paths := r.Paths()
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"/", "/etc/passwd"}) {
		t.Errorf("paths %q", paths)
	}
	var re *RefusedError
	if err := r.Err(); !errors.As(err, &re) || len(re.Refused) != 2 ||
		!strings.HasPrefix(err.Error(), "the agent asked for 2 paths outside the working directory "+root+", which were refused: ") ||
		!strings.Contains(err.Error(), "read /etc/passwd") || !strings.Contains(err.Error(), "run a command in /") {
		t.Errorf("err %v", err)
	}
}

// TestRefusalMessagesSafe: the agent chooses the paths it asks for; a refusal's message (a
// warning on stderr, the run's error) shows one holding escape sequences or bidi controls quoted,
// and a plain one as it is.
func TestRefusalMessagesSafe(t *testing.T) {
	var r Refusals
	r.Add(&OutsideError{Op: "write", Path: "/etc/x\x1b]52;c;ZXZpbA==\x07\u202e", Root: "/w/work"})
	r.Add(&OutsideError{Op: "read", Path: "/etc/passwd", Root: "/w/work"})
	want := `the agent asked for 2 paths outside the working directory /w/work, which were refused: ` +
		`write "/etc/x\x1b]52;c;ZXZpbA==\a\u202e", read /etc/passwd`
	if got := r.Err().Error(); got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := r.list[0].Error(); got != `refused to write "/etc/x\x1b]52;c;ZXZpbA==\a\u202e": it is outside the working directory /w/work` {
		t.Errorf("%q", got)
	}
}

// TestDirFilesRelativePath: a relative path (ACP asks for absolute ones) is read and written in
// the session's folder, not refused as outside it; one that climbs out is still refused.
func TestDirFilesRelativePath(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "sub", "f.txt"), []byte("inside\n"), 0o644))
	var refused []string
	d := &DirFiles{Root: root, OnRefused: func(e *OutsideError) { refused = append(refused, e.Path) }}
	r, err := d.ReadTextFile(t.Context(), acp.ReadTextFileRequest{Path: "sub/f.txt"})
	if err != nil || r.Content != "inside\n" {
		t.Fatalf("read sub/f.txt: %q %v", r.Content, err)
	}
	if _, err := d.WriteTextFile(t.Context(), acp.WriteTextFileRequest{Path: "new.txt", Content: "w"}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "new.txt")); err != nil || string(data) != "w" {
		t.Errorf("new.txt: %q %v", data, err)
	}
	if _, err := d.ReadTextFile(t.Context(), acp.ReadTextFileRequest{Path: "../x"}); err == nil {
		t.Error("../x was read")
	}
	if !slices.Equal(refused, []string{"../x"}) {
		t.Errorf("refused %q", refused)
	}
}
