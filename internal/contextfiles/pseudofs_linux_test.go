//go:build linux

package contextfiles

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPseudoFileSystemsAreNotWalked: rules on /proc and /sys take nothing and say why, at once
// (before, '/proc/**' walked every process's tree, and '/proc' read files that block); a walk that
// reaches one below its base (a link inside an absolute rule's folder) does not enter it either.
func TestPseudoFileSystemsAreNotWalked(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/proc", &st); err != nil || st.Type != 0x9fa0 {
		t.Skip("/proc is not a proc file system here")
	}
	s, cwd := newTestStore(t)
	tree(t, cwd, "a.md")
	for _, tc := range []struct{ rule, want string }{
		{"/proc/**", "skipping /proc: it is a proc file system, which qkit never reads for context (rule '/proc/**')"},
		{"/proc/*/status", "skipping /proc: it is a proc file system, which qkit never reads for context (rule '/proc/*/status')"},
		{"/proc", "skipping /proc: it is a proc file system, which qkit never reads for context (rule '/proc')"},
		{"/sys/**/*", "skipping /sys: it is a sysfs file system, which qkit never reads for context (rule '/sys/**/*')"},
	} {
		ex := expandRules(t, s, cwd, tc.rule)
		if len(ex.files) != 0 || len(ex.warnings) != 1 || ex.warnings[0] != tc.want {
			t.Errorf("%s: files %q, warnings %q; want none and %q", tc.rule, paths(ex), ex.warnings, tc.want)
		}
	}

	// /proc met below the base of a walk (a rule on / whose pattern leads into it).
	r, err := s.resolve("/proc/**", cwd)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	w := walker{onMatch: func(int, string) { t.Error("a file matched") }, warn: func(m string) { warnings = append(warnings, m) }}
	w.walkGroup(group{base: "/", root: "/", matchers: []*matcher{newMatcher(0, r, "proc/**")}})
	if want := "skipping /proc: it is a proc file system, which qkit never reads for context (rule '/proc/**')"; len(warnings) != 1 || warnings[0] != want {
		t.Errorf("walk from /: warnings %q, want %q", warnings, want)
	}

	// add says why such a glob matches nothing.
	_, err = s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"/proc/**"}, AddOptions{Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), "it is a proc file system, which qkit never reads for context") {
		t.Errorf("Add(/proc/**) = %v", err)
	}
}

// TestDevtmpfsIsTold: statfs calls /dev a tmpfs; the mount table says it is a devtmpfs, which is not
// walked, while a real tmpfs is.
func TestDevtmpfsIsTold(t *testing.T) {
	var st syscall.Stat_t
	if err := syscall.Stat("/dev", &st); err != nil {
		t.Skip(err)
	}
	var m mountTable
	if m.typeOf(devName(uint64(st.Dev))) != "devtmpfs" { // Dev is 32 bits on some architectures
		t.Skip("/dev is not a devtmpfs here")
	}
	s, cwd := newTestStore(t)
	ex := expandRules(t, s, cwd, "/dev/**")
	want := "skipping /dev: it is a devtmpfs file system, which qkit never reads for context (rule '/dev/**')"
	if len(ex.files) != 0 || len(ex.warnings) != 1 || ex.warnings[0] != want {
		t.Errorf("files %q, warnings %q", paths(ex), ex.warnings)
	}
	if shm, err := os.Stat("/dev/shm"); err == nil && shm.IsDir() {
		d, err := os.Open("/dev/shm")
		if err != nil {
			t.Skip(err)
		}
		defer d.Close()
		if kind := pseudoFS(d, filepath.Clean("/dev/shm"), &m); kind != "" {
			t.Errorf("/dev/shm: %q, want a real file system", kind)
		}
	}
}
