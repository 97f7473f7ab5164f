package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qkit-cli/qkit/internal/fullbin"
)

// liteInstalled (a subtest of TestLite): the two binaries laid out where make install puts them,
// read from `make -n install` (which builds and copies nothing), work from a fresh home: a
// forwarded command run through bin/qkit finds qkit-full in libexec/qkit, with nothing beside it.
// make build must make the light build as the qkit that install puts in bin.
func liteInstalled(t *testing.T, dir string) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make: the layout is read from make -n install")
	}
	// Read here so that go test's cache knows the result depends on it (make reads it, not the test).
	if _, err := os.ReadFile("Makefile"); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "prefix")
	cmd := exec.Command("make", "-n", "--no-print-directory", "install", "PREFIX="+prefix, "DESTDIR=", "PHASE_TIMES=") // no timing prefix on the lines read
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}

	// What make build makes: the output of each go build, and whether it is the light build.
	built := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^.*\bgo build\b.*$`).FindAllString(string(out), -1) {
		o := regexp.MustCompile(`\s-o\s+(\S+)`).FindStringSubmatch(m)
		if o == nil {
			continue
		}
		built[o[1]] = fullbin.Name
		if regexp.MustCompile(`\s-tags[= ]qkit_lite\b`).MatchString(m) {
			built[o[1]] = "qkit"
		}
	}
	// Where make install puts each of them.
	placed := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^install -m 0?755 (\S+) (\S+)$`).FindAllStringSubmatch(string(out), -1) {
		which, ok := built[m[1]]
		if !ok {
			t.Fatalf("make install installs %s, which make build does not make (%v)", m[1], built)
		}
		placed[which] = m[2]
	}
	qkit, helper := placed["qkit"], placed[fullbin.Name]
	if qkit != filepath.Join(prefix, "bin", "qkit") || helper != filepath.Join(prefix, "libexec", "qkit", fullbin.Name) {
		t.Fatalf("make install puts the light build at %q and the full one at %q; want bin/qkit and libexec/qkit/%s under %s\n%s",
			qkit, helper, fullbin.Name, prefix, out)
	}
	for src, dst := range map[string]string{"qkit": qkit, fullbin.Name: helper} {
		data, err := os.ReadFile(filepath.Join(dir, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	env = liteEnv(t) // a fresh home, and no QKIT_FULL_BIN
	stdout, stderr, code := runLite(t, env, qkit, "sessions", "list", "--json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("installed qkit sessions list --json with a fresh home: exit %d, stdout %q, stderr %q; want [] from qkit-full", code, stdout, stderr)
	}
	stdout, stderr, code = runLite(t, env, qkit, "doctor", "--help")
	if code != 0 || !strings.Contains(stdout, "doctor") {
		t.Errorf("installed qkit doctor --help: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
