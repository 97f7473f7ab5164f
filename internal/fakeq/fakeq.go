// Package fakeq is a stand-in for the Amazon Q Developer CLI (`q`) used by tests and benchmarks.
// Everything it does is chosen through environment variables, so a test sets up a behaviour and
// then runs qkit as usual:
//
//	FAKEQ_RECORD=file      append this run's argv (without the program name) as one JSON line
//	FAKEQ_OUTPUT=text      print text to stdout ("\n" escapes are read as line breaks)
//	FAKEQ_ECHO_PROMPT=1    print the prompt to stdout: the positional argument or, when there is
//	                       none, all of stdin (as q reads it in --no-interactive mode)
//	FAKEQ_LINES=n          print n lines "line 1" … "line n"
//	FAKEQ_BYTES=n          print n bytes as 84-byte lines (the last one may be shorter)
//	FAKEQ_INTERVAL=d       wait d (Go duration) between lines
//	FAKEQ_FIRST_STAMP=file after the first line is written, write the time (Unix nanoseconds) to file
//	FAKEQ_BEFORE_STAMP=file the same, but the time just before the first line is written: a latency
//	                       measured from it is never less than the real one
//	FAKEQ_ANSI=1           colour every stdout line and prefix the reply with q's green "> "
//	FAKEQ_STDERR=text      print text to stderr
//	FAKEQ_APPROVAL=1       fail as q does when a tool needs approval in --no-interactive mode
//	FAKEQ_APPROVAL_TOOL=t  the same, but only unless t is trusted (--trust-all-tools or --trust-tools);
//	                       first prints q's "Using tool: t" line on stdout, naming the tool
//	FAKEQ_GRANDCHILD=file  start a grandchild process that sleeps for a minute; write its PID to file
//	FAKEQ_SLEEP=d          sleep d after printing, before exiting
//	FAKEQ_EXIT=n           exit with status n (default 0)
//	FAKEQ_LOGGED_OUT=1     `whoami` fails as when nobody is logged in
//
// `q whoami` prints a logged-in user unless FAKEQ_LOGGED_OUT is set. `q acp` is an ACP agent
// imitating `kiro-cli acp`: see acp.go.
package fakeq

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ApprovalError is what the real CLI prints when a tool needs approval in non-interactive mode.
const ApprovalError = "Tool approval required but --no-interactive was specified. Use --trust-all-tools to automatically approve tools."

// sleeperEnv makes the fake run as the grandchild: it only sleeps.
const sleeperEnv = "FAKEQ_SLEEPER"

// Main runs the fake with os.Args and returns its exit status.
func Main() int { return Run(os.Args[1:]) }

// Run runs the fake with args (without the program name).
func Run(args []string) int {
	if d := os.Getenv(sleeperEnv); d != "" {
		dur, _ := time.ParseDuration(d)
		time.Sleep(dur)
		return 0
	}
	if f := os.Getenv("FAKEQ_RECORD"); f != "" {
		if err := record(f, args); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 97
		}
	}
	if len(args) > 0 && args[0] == "whoami" {
		if os.Getenv("FAKEQ_LOGGED_OUT") != "" {
			fmt.Fprintln(os.Stderr, "error: Not logged in, please log in with q login")
			return 1
		}
		fmt.Println("Logged in with Builder ID")
		return 0
	}
	if len(args) > 0 && args[0] == "acp" {
		return acpMain(args[1:]) // acp.go
	}
	if len(args) == 0 || args[0] != "chat" {
		fmt.Fprintf(os.Stderr, "error: unrecognized subcommand %q\n", strings.Join(args, " "))
		return 2
	}
	if f := os.Getenv("FAKEQ_GRANDCHILD"); f != "" {
		if err := startGrandchild(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 98
		}
	}
	if needsApproval(args) {
		if tool := os.Getenv("FAKEQ_APPROVAL_TOOL"); tool != "" && os.Getenv("FAKEQ_APPROVAL") == "" {
			fmt.Println("Using tool: " + tool)
		}
		fmt.Fprintln(os.Stderr, "error: "+ApprovalError)
		return 1
	}
	code := chat(args)
	if s := os.Getenv("FAKEQ_STDERR"); s != "" {
		fmt.Fprint(os.Stderr, unescape(s))
	}
	if d := envDuration("FAKEQ_SLEEP"); d > 0 {
		time.Sleep(d)
	}
	if code != 0 {
		return code
	}
	n, _ := strconv.Atoi(os.Getenv("FAKEQ_EXIT"))
	return n
}

func record(file string, args []string) error {
	line, err := json.Marshal(args)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

func needsApproval(args []string) bool {
	if os.Getenv("FAKEQ_APPROVAL") != "" {
		return true
	}
	tool := os.Getenv("FAKEQ_APPROVAL_TOOL")
	if tool == "" {
		return false
	}
	for _, a := range args {
		if a == "--trust-all-tools" || a == "-a" {
			return false
		}
		if list, ok := strings.CutPrefix(a, "--trust-tools="); ok {
			for _, t := range strings.Split(list, ",") {
				if t == tool {
					return false
				}
			}
		}
	}
	return true
}

func chat(args []string) int {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer w.Flush()
	interval := envDuration("FAKEQ_INTERVAL")
	ansi := os.Getenv("FAKEQ_ANSI") != ""
	stampFile := os.Getenv("FAKEQ_FIRST_STAMP")
	beforeFile := os.Getenv("FAKEQ_BEFORE_STAMP")
	first := true
	emit := func(line string) {
		if ansi {
			line = "\x1b[32m" + line + "\x1b[0m"
		}
		before := time.Now() // taken before the write, stored after it: the file costs time too
		_, _ = w.WriteString(line)
		if interval > 0 || first {
			_ = w.Flush()
		}
		if first && stampFile != "" {
			_ = os.WriteFile(stampFile, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
		}
		if first && beforeFile != "" {
			_ = os.WriteFile(beforeFile, []byte(strconv.FormatInt(before.UnixNano(), 10)), 0o600)
		}
		first = false
		if interval > 0 {
			time.Sleep(interval)
		}
	}
	if ansi {
		_, _ = w.WriteString("\x1b[38;5;10m> \x1b[0m")
	}
	if os.Getenv("FAKEQ_ECHO_PROMPT") != "" {
		if p, ok := prompt(args[1:]); ok {
			emit(p + "\n")
		} else if in, err := io.ReadAll(os.Stdin); err == nil && len(in) > 0 {
			emit(strings.TrimSpace(string(in)) + "\n")
		}
	}
	if s := os.Getenv("FAKEQ_OUTPUT"); s != "" {
		for _, line := range strings.SplitAfter(unescape(s), "\n") {
			if line != "" {
				emit(line)
			}
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("FAKEQ_LINES")); n > 0 {
		for i := 1; i <= n; i++ {
			emit("line " + strconv.Itoa(i) + "\n")
		}
	}
	if n, _ := strconv.ParseInt(os.Getenv("FAKEQ_BYTES"), 10, 64); n > 0 {
		line := strings.Repeat("y", 83) + "\n"
		for n > 0 {
			chunk := line
			if int64(len(chunk)) > n {
				chunk = chunk[:n]
			}
			emit(chunk)
			n -= int64(len(chunk))
		}
	}
	return 0
}

// prompt finds q chat's positional prompt among its flags, as q's parser would.
func prompt(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case a == "--agent" || a == "--model" || a == "--profile":
			i++ // the flag's value
		case strings.HasPrefix(a, "-"):
		default:
			return a, true
		}
	}
	return "", false
}

func startGrandchild(pidFile string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c := exec.Command(self)
	c.Env = append(os.Environ(), sleeperEnv+"=60s")
	// The grandchild keeps q's stdout and stderr, as a real helper process would: a runner that waits
	// for the pipes to close without killing the process group hangs for the whole minute.
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return err
	}
	return os.WriteFile(pidFile, []byte(strconv.Itoa(c.Process.Pid)), 0o600)
}

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

func unescape(s string) string { return strings.ReplaceAll(s, `\n`, "\n") }
