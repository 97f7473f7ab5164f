//go:build linux

// Command testtimes measures `make test` against the project's targets for it: on a clean clone of
// HEAD (the module cache as it is; the build cache as it is, or a fresh one with -fresh), every Go
// test run (TESTFLAGS=-count=1); again, which fills go test's cache; then after one package
// changed, that cache in use. It prints each phase's wall and CPU time and peak memory, and writes
// the table to bin/test-times.txt, which `make bench` prints. Run it with `make test-times`.
//
//	go run ./bench/testtimes [-fresh] [-change internal/contextfiles] [-out bin/test-times.txt]
//
// The phases overlap (make test runs them side by side), so their times do not add up to the total.
// Peak memory is the largest summed proportional set size (PSS, shared pages counted once) of
// make test's whole process tree, sampled every half second; the per-phase figure is the largest
// single process's peak resident set, as /usr/bin/time -v gives it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// The targets, for a quiet 2-core machine: a clean clone (and the rerun that fills go test's
// cache), a run after one package changed, memory.
const (
	cleanTarget   = 5 * time.Minute
	changedTarget = 2 * time.Minute
	memTargetMiB  = 1024
)

func main() {
	fresh := flag.Bool("fresh", false, "use a fresh build cache (GOCACHE) and staticcheck cache for the clean clone")
	change := flag.String("change", "internal/contextfiles", "the package `dir` to change for the second run")
	out := flag.String("out", filepath.Join("bin", "test-times.txt"), "write the table to `file` too")
	flag.Parse()
	if err := run(*fresh, *change, *out); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
}

// result is one `make test`.
type result struct {
	wall, user, sys time.Duration
	peakPSS         int64  // bytes, summed over the process tree
	peakAt          string // when the peak came, and the largest processes then
	phases          []phase
	err             error
}

// phase is one line that make test PHASE_TIMES=FILE appended.
type phase struct {
	name            string
	wall, user, sys float64 // seconds
	maxRSS          int64   // KiB
}

func run(fresh bool, change, out string) error {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return fmt.Errorf("make test's phase times need GNU time at /usr/bin/time (apt-get install time): %w", err)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	head, err := output(root, "git", "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	if dirty, _ := output(root, "git", "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		fmt.Fprintln(os.Stderr, "testtimes: measuring the commit HEAD; changes not committed are not in it")
	}
	tmp, err := os.MkdirTemp("", "qkit-test-times-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	clone := filepath.Join(tmp, "qkit")
	if _, err := output(root, "git", "clone", "--quiet", "--no-hardlinks", root, clone); err != nil {
		return err
	}
	env := cleanEnv()
	cache := "build cache warm"
	if fresh {
		cache = "build cache fresh"
		env = append(env, "GOCACHE="+filepath.Join(tmp, "gocache"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
	}
	loadBefore := loadavg()

	// Every Go test runs in the clean clone, as in CI: test results cached by earlier runs elsewhere
	// (the test binaries do not depend on the folder, being built with -trimpath) are not used. A
	// result of -count=1 is not cached either, so a second run, as a developer's make test would,
	// fills go test's cache before the package changes.
	runs := []*measuredRun{
		{name: "clean clone", args: []string{"TESTFLAGS=-count=1"}, target: cleanTarget},
		{name: "again, filling the test cache", target: cleanTarget},
		{name: "one package changed", target: changedTarget, before: func() error {
			return touchPackage(filepath.Join(clone, change))
		}},
	}
	var failed error
	for i, r := range runs {
		if r.before != nil {
			if err := r.before(); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "testtimes: make test, %s (%s, commit %s)\n", r.name, cache, head)
		r.res = makeTest(clone, env, filepath.Join(tmp, fmt.Sprintf("%d.phases", i)), r.args...)
		if r.res.err != nil {
			failed = fmt.Errorf("make test, %s: %w", r.name, r.res.err)
			break
		}
	}

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "make test, measured %s on %d CPUs (load %s before, %s after), commit %s, module cache warm, %s; the package changed: %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), loadBefore, loadavg(), head, cache, change)
	table(&buf, runs)
	os.Stdout.Write(buf.Bytes())
	if out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return failed
}

// measuredRun is one make test of the measurement.
type measuredRun struct {
	name   string
	args   []string      // for make
	target time.Duration // the wall time it should take at most
	before func() error  // what to do to the clone first
	res    result
}

// cleanEnv is this process's environment without the outer make's variables, so the clone's make
// is a make of its own, not a sub-make.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// makeTest runs make test in dir, its output to stderr, and measures it.
func makeTest(dir string, env []string, phases string, args ...string) result {
	c := exec.Command("make", append([]string{"test", "PHASE_TIMES=" + phases}, args...)...)
	c.Dir, c.Env = dir, env
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := c.Start(); err != nil {
		return result{err: err}
	}
	stop := make(chan struct{})
	type peak struct {
		pss int64
		at  string
	}
	peaks := make(chan peak, 1)
	go func() {
		var max peak
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if sum, top := treePSS(c.Process.Pid); sum > max.pss {
				max = peak{sum, fmt.Sprintf("%.0f s in: %s", time.Since(start).Seconds(), top)}
			}
			select {
			case <-stop:
				peaks <- max
				return
			case <-t.C:
			}
		}
	}()
	err := c.Wait()
	close(stop)
	p := <-peaks
	r := result{wall: time.Since(start), peakPSS: p.pss, peakAt: p.at, err: err}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.user = time.Duration(ru.Utime.Nano())
		r.sys = time.Duration(ru.Stime.Nano())
	}
	r.phases, _ = readPhases(phases)
	return r
}

// treePSS sums the proportional set size of pid and its descendants, in bytes, and names the
// largest of them.
func treePSS(pid int) (int64, string) {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(fields[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	type proc struct {
		name string
		pss  int64
	}
	var sum int64
	var procs []proc
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = append(todo[:len(todo)-1], children[p]...)
		n := pss(p)
		sum += n
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		procs = append(procs, proc{strings.TrimSpace(string(comm)), n})
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].pss > procs[j].pss })
	var top []string
	for _, p := range procs[:min(len(procs), 5)] {
		top = append(top, fmt.Sprintf("%s %d MiB", p.name, p.pss>>20))
	}
	return sum, strings.Join(top, ", ")
}

// pss reads Pss from /proc/pid/smaps_rollup, in bytes; 0 when the process is gone.
func pss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// readPhases reads the lines make test PHASE_TIMES=file appended: name wall user sys maxrss. A
// phase timed more than once (fuzz-ci times each fuzz target) is their sum, with the largest
// process of any of them.
func readPhases(file string) ([]phase, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parsePhases(string(data)), nil
}

func parsePhases(data string) []phase {
	var ps []phase
	at := map[string]int{}
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue // GNU time's "Command exited with non-zero status" lines
		}
		p := phase{name: f[0]}
		p.wall, _ = strconv.ParseFloat(f[1], 64)
		p.user, _ = strconv.ParseFloat(f[2], 64)
		p.sys, _ = strconv.ParseFloat(f[3], 64)
		p.maxRSS, _ = strconv.ParseInt(f[4], 10, 64)
		i, ok := at[p.name]
		if !ok {
			at[p.name] = len(ps)
			ps = append(ps, p)
			continue
		}
		q := &ps[i]
		q.wall, q.user, q.sys, q.maxRSS = q.wall+p.wall, q.user+p.user, q.sys+p.sys, max(q.maxRSS, p.maxRSS)
	}
	return ps
}

// touchPackage adds a comment line to the first non-test Go file of dir, which changes the package
// as an edit would: it is compiled, vetted, checked and tested again, and so is every package that
// imports it.
func touchPackage(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = io.WriteString(fh, "\n// Changed by make test-times.\n")
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fmt.Errorf("%s has no Go file to change", dir)
}

func table(w io.Writer, runs []*measuredRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "PHASE (wall s, cpu s, max RSS MiB)")
	for _, r := range runs {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(r.name))
	}
	fmt.Fprintln(tw)
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, p := range r.res.phases {
			if !seen[p.name] {
				names, seen[p.name] = append(names, p.name), true
			}
		}
	}
	for _, name := range names {
		fmt.Fprint(tw, name)
		for _, r := range runs {
			cell := "-"
			for _, p := range r.res.phases {
				if p.name == name {
					cell = fmt.Sprintf("%.1f, %.1f, %d", p.wall, p.user+p.sys, p.maxRSS/1024)
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WHOLE make test\tWALL s\tCPU s\tPEAK PSS MiB\tTARGET\tRESULT")
	for _, r := range runs {
		if r.res.wall == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t\tnot run\n", r.name)
			continue
		}
		mib := r.res.peakPSS >> 20
		verdict := "ok"
		switch {
		case r.res.err != nil:
			verdict = "FAILED: " + r.res.err.Error()
		case r.res.wall > r.target || mib >= memTargetMiB:
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t<= %.0f s, < %d MiB\t%s\n", r.name, r.res.wall.Seconds(), (r.res.user + r.res.sys).Seconds(), mib, r.target.Seconds(), memTargetMiB, verdict)
	}
	tw.Flush()
	for _, r := range runs {
		if r.res.peakAt != "" {
			fmt.Fprintf(w, "peak PSS, %s: %s\n", r.name, r.res.peakAt)
		}
	}
}

// output runs argv in dir and returns its trimmed stdout.
func output(dir string, argv ...string) (string, error) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	var errb strings.Builder
	c.Stderr = &errb
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// loadavg is the 1-minute load average, as /proc/loadavg gives it.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
