//go:build linux

// Command bench measures qkit end to end and prints one table of figures against their targets.
// It builds qkit (the light build) and qkit-full beside it, the fake q, a one-line agent and a
// hello-world binary into a scratch folder, runs every suite, then
// the Go benchmarks of the repository. Run it with `make bench`.
//
//	go run ./bench [-only REGEXP] [-skip-go]
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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// figure is one row of the table.
type figure struct {
	Name   string
	Value  float64
	Unit   string
	Target string // e.g. "<= 3"; empty when there is none
	Pass   *bool  // nil when there is no target
}

func (f figure) verdict() string {
	switch {
	case f.Pass == nil:
		return ""
	case *f.Pass:
		return "ok"
	}
	return "MISSED"
}

// atMost builds a figure with an upper target.
func atMost(name string, v float64, unit string, limit float64) figure {
	ok := v <= limit
	return figure{Name: name, Value: v, Unit: unit, Target: fmt.Sprintf("<= %g", limit), Pass: &ok}
}

func atLeast(name string, v float64, unit string, limit float64) figure {
	ok := v >= limit
	return figure{Name: name, Value: v, Unit: unit, Target: fmt.Sprintf(">= %g", limit), Pass: &ok}
}

func info(name string, v float64, unit string) figure {
	return figure{Name: name, Value: v, Unit: unit}
}

// suite is a group of end-to-end measurements. Each area of qkit adds its own in its own file.
type suite struct {
	name string
	run  func(*bench) ([]figure, error)
}

func suites() []suite {
	return []suite{
		{"startup", startupSuite},
		{"internal", internalSuite},
		{"context", contextSuite},
		{"agent", agentSuite},
		{"ask-acp", askACPSuite},
		{"mcp", mcpSuite},
		{"questions", questionsSuite},
		{"questions-nats", questionsNATSSuite},
		{"questions-web", questionsWebSuite},
		{"acp", acpSuite},
		{"proxy", proxySuite},
		{"sessions", sessionsSuite},
	}
}

// bench holds the binaries and the scratch folder shared by the suites.
type bench struct {
	dir   string // scratch folder, removed at the end
	qkit  string // qkit binary: the light build (tag qkit_lite), as make build makes bin/qkit
	full  string // qkit-full beside it, which qkit runs for what it does not link
	agent string // a compiled agent that prints one line: the floor of any ask
	fakeq string // folder holding the fake `q`, to put first on PATH
	hello string // hello-world binary, the baseline for process start-up
	root  string // repository root
}

// env returns an environment for a qkit run: a private QKIT_HOME under home, the fake q first on
// PATH, agent.backend chat, plus extra.
func (b *bench) env(home string, extra ...string) []string {
	env := []string{
		"PATH=" + b.fakeq + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"QKIT_HOME=" + filepath.Join(home, ".qkit"),
		// The fake q speaks ACP too: suites that measure the ACP backend say so in extra (a later
		// entry wins), the others measure the text path.
		"QKIT_AGENT_BACKEND=chat",
	}
	return append(env, extra...)
}

// timeRuns runs argv n times and returns the median wall time. Any failure aborts.
func timeRuns(n int, env []string, dir string, argv ...string) (time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		c := exec.Command(argv[0], argv[1:]...)
		c.Env, c.Dir = env, dir
		var errb bytes.Buffer
		c.Stderr = &errb
		start := time.Now()
		if err := c.Run(); err != nil {
			return 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
		}
		times = append(times, time.Since(start))
	}
	return median(times), nil
}

// interleaved runs each argv once per round, n rounds, so drift in the machine's load hits them all
// alike, and returns their medians in order.
func interleaved(n int, env []string, dir string, argvs ...[]string) ([]time.Duration, error) {
	times := make([][]time.Duration, len(argvs))
	for range n {
		for i, argv := range argvs {
			d, err := timeRuns(1, env, dir, argv...)
			if err != nil {
				return nil, err
			}
			times[i] = append(times[i], d)
		}
	}
	meds := make([]time.Duration, len(argvs))
	for i, ts := range times {
		meds[i] = median(ts)
	}
	return meds, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// peakRSS runs c and returns the largest resident set of it and of the processes it started
// (watchHWM).
func peakRSS(c *exec.Cmd) (int64, error) {
	if err := c.Start(); err != nil {
		return 0, err
	}
	hwm := watchHWM(c.Process.Pid)
	err := c.Wait()
	return hwm(), err
}

// watchHWM reads the peak resident set (VmHWM) of pid and of its children every 2 ms until the
// returned function is called after pid has exited, which gives the largest seen. Not the maxrss
// of wait's rusage: os/exec starts a child with vfork, and Linux carries the parent's high-water
// mark across the exec, so every child read as large as this process (50 MB by the time the
// context suite has run). VmHWM is the high-water mark of the process's own memory since its exec.
func watchHWM(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			for _, p := range family(pid) {
				if hwm, err := procStatus(p, "VmHWM"); err == nil && hwm > peak.Load() {
					peak.Store(hwm)
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// family is pid and its children (qkit and the agent it runs).
func family(pid int) []int {
	out := []int{pid}
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// startServe starts `qkit <server> serve` in home with its stdin and stdout as pipes for a client;
// stderr is collected for error messages.
func (b *bench) startServe(home string, env []string, server string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *strings.Builder, error) {
	cmd := exec.Command(b.qkit, server, "serve")
	cmd.Env, cmd.Dir = b.env(home, env...), home
	return startPiped(cmd)
}

// startPiped starts cmd with its stdin and stdout as pipes; stderr is collected for error messages.
func startPiped(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *strings.Builder, error) {
	errb := &strings.Builder{}
	cmd.Stderr = errb
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, in, out, errb, nil
}

// procStatus is a size field of /proc/pid/status (VmRSS, VmHWM, …), in bytes.
func procStatus(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// runOut runs argv once and returns its stdout; a failure carries its stderr.
func runOut(env []string, dir string, argv ...string) (string, error) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env, c.Dir = env, dir
	var errb strings.Builder
	c.Stderr = &errb
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return string(out), nil
}

// cpuTicks reads utime+stime of pid from /proc.
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(fields[11], &utime); err != nil {
		return 0, err
	}
	if _, err := fmt.Sscan(fields[12], &stime); err != nil {
		return 0, err
	}
	return utime + stime, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func main() {
	only := flag.String("only", "", "run only suites whose name matches `REGEXP`")
	skipGo := flag.Bool("skip-go", false, "skip the Go benchmarks")
	flag.Parse()
	if err := run(*only, *skipGo); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(only string, skipGo bool) error {
	re, err := regexp.Compile(only)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "qkit-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{dir: dir, root: root, qkit: filepath.Join(dir, "qkit"), full: filepath.Join(dir, "qkit-full"),
		fakeq: filepath.Join(dir, "fakeq"), hello: filepath.Join(dir, "hello"), agent: filepath.Join(dir, "oneline", "q")}
	if err := b.build(); err != nil {
		return err
	}
	var figs []figure
	for _, s := range suites() {
		if !re.MatchString(s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s\n", s.name)
		fs, err := s.run(b)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		figs = append(figs, fs...)
	}
	if !skipGo && only == "" {
		fs, err := goBenchmarks(root)
		if err != nil {
			return err
		}
		figs = append(figs, fs...)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FIGURE\tVALUE\tUNIT\tTARGET\tRESULT")
	for _, f := range figs {
		fmt.Fprintf(w, "%s\t%.3f\t%s\t%s\t%s\n", f.Name, f.Value, f.Unit, f.Target, f.verdict())
	}
	return w.Flush()
}

func (b *bench) build() error {
	hello, agent := filepath.Join(b.dir, "hello-src"), filepath.Join(b.dir, "oneline-src")
	for dir, src := range map[string]string{
		hello: "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n",
		agent: "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"the answer\\n\") }\n",
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+filepath.Base(dir)+"\n\ngo 1.25\n"), 0o644); err != nil {
			return err
		}
	}
	// Every binary with the same flags as make build's (and the hello-world's).
	steps := []struct {
		dir  string
		args []string
	}{
		{b.root, []string{"build", "-trimpath", "-tags", "qkit_lite", "-ldflags", "-s -w", "-o", b.qkit, "."}},
		{b.root, []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", b.full, "."}},
		{b.root, []string{"build", "-o", filepath.Join(b.fakeq, "q"), "./internal/fakeq/q"}},
		{hello, []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", b.hello, "."}},
		{agent, []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", b.agent, "."}},
	}
	for _, s := range steps {
		c := exec.Command("go", s.args...)
		c.Dir = s.dir
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(s.args, " "), err, out)
		}
	}
	// Each binary is measured as installed, copied (make install's install(1) copies): as the linker
	// writes it (through a memory map), the same qkit started 1-1.4 ms slower on this machine than a copy
	// of it written in one piece (measured interleaved, 150 runs each), which would favour the small
	// hello-world. A copy's peak RSS is higher by the file pages it maps (mcp serve's 200 MB figure:
	// 54 MiB instead of 43; shared page cache, not the heap).
	for _, bin := range []string{b.qkit, b.full, b.hello, b.agent} {
		if err := recopy(bin); err != nil {
			return err
		}
	}
	return nil
}

// recopy replaces the file at path with a copy of it.
func recopy(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tmp := path + ".copy"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// startupSuite: the light qkit's start against a hello-world built in the same run with the same
// flags, medians of interleaved runs (so a change in the machine's load does not favour one):
// `qkit version` and `qkit context show` within 2 hello-worlds, settings list --json within 4; qkit-full
// for comparison (what one binary with everything would cost); `qkit ask` with a compiled
// one-line agent, whose overhead over the agent run directly must stay within 3 hello-world
// starts; the binaries' sizes.
func startupSuite(b *bench) ([]figure, error) {
	home := filepath.Join(b.dir, "startup")
	env := b.env(home)
	const n = 40
	meds, err := interleaved(n, env, b.dir, []string{b.hello}, []string{b.qkit, "version"}, []string{b.qkit, "context", "show"},
		[]string{b.qkit, "settings", "list", "--json"}, []string{b.full, "version"}, []string{b.full, "context", "show"})
	if err != nil {
		return nil, err
	}
	hello, version, show, list, fullVersion, fullShow := meds[0], meds[1], meds[2], meds[3], meds[4], meds[5]
	askEnv := append(env, "QKIT_AGENT_COMMAND="+b.agent)
	askMeds, err := interleaved(n, askEnv, b.dir, []string{b.hello}, []string{b.agent, "chat", "--no-interactive", "hello"},
		[]string{b.qkit, "ask", "--no-context", "hello"})
	if err != nil {
		return nil, err
	}
	askHello, direct, ask := askMeds[0], askMeds[1], askMeds[2]
	ratio := func(d, base time.Duration) float64 { return float64(d) / float64(base) }
	figs := []figure{
		info("startup: hello-world median", ms(hello), "ms"),
		info("startup: qkit version median", ms(version), "ms"),
		atMost("startup: qkit version / hello-world", ratio(version, hello), "x", 2),
		info("startup: qkit context show median", ms(show), "ms"),
		atMost("startup: qkit context show / hello-world", ratio(show, hello), "x", 2),
		info("startup: qkit settings list --json median", ms(list), "ms"),
		atMost("startup: settings list --json / hello-world", ratio(list, hello), "x", 4),
		info("startup: qkit-full version / hello-world (one binary with everything)", ratio(fullVersion, hello), "x"),
		info("startup: qkit-full context show / hello-world", ratio(fullShow, hello), "x"),
		info("startup: one-line agent direct median", ms(direct), "ms"),
		info("startup: qkit ask --no-context with it, median", ms(ask), "ms"),
		atMost("startup: ask overhead over the agent, in hello-world starts", ratio(ask-direct, askHello), "x", 3),
	}
	for _, bin := range []struct{ name, path string }{{"qkit", b.qkit}, {"qkit-full", b.full}} {
		st, err := os.Stat(bin.path)
		if err != nil {
			return nil, err
		}
		figs = append(figs, info("startup: binary size, "+bin.name, float64(st.Size())/(1<<20), "MiB"))
	}
	return figs, nil
}

// goTarget turns one metric of a Go benchmark into a row with a target.
type goTarget struct {
	name  string  // the row's name
	unit  string  // the metric it reads, e.g. ns/op
	scale float64 // the metric times scale is the row's value
	shown string  // the row's unit
	limit float64 // at most this
}

// goTargets are the Go benchmarks that carry a target, keyed "package Benchmark" as goBenchmarks
// names them; the others are rows without one.
var goTargets = map[string]goTarget{
	"internal/structured BenchmarkExtractValidate100KB": {name: "structured: extract + validate a 100 KB reply (Go benchmark)",
		unit: "ns/op", scale: 1e-6, shown: "ms", limit: 1},
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// goBenchmarks runs every Go benchmark once (-benchtime=1x is too noisy; 1s each keeps the run
// short) and turns each metric into a figure.
func goBenchmarks(root string) ([]figure, error) {
	c := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "1s", "./...")
	c.Dir = root
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %v\n%s", err, out)
	}
	var figs []figure
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(p, "github.com/qkit-cli/qkit/")
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			var v float64
			if _, err := fmt.Sscan(fields[i], &v); err != nil {
				continue
			}
			if t, ok := goTargets[pkg+" "+m[1]]; ok && t.unit == fields[i+1] {
				figs = append(figs, atMost(t.name, v*t.scale, t.shown, t.limit))
			}
			figs = append(figs, info(fmt.Sprintf("go: %s %s", pkg, m[1]), v, fields[i+1]))
		}
	}
	return figs, nil
}
