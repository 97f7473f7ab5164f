package natstest

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server whose test process ends without stopping it (a panic, go test's timeout, Ctrl-C) does
// not outlive it: a child test process starts one, prints its process id and exits at once.
func TestTheServerEndsWithTheTestProcess(t *testing.T) {
	if os.Getenv("NATSTEST_CHILD") == "1" {
		s, err := Start(Options{})
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("pid " + strconv.Itoa(s.proc.cmd.Process.Pid) + "\n")
		os.Exit(0)
	}
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheServerEndsWithTheTestProcess$")
	cmd.Env = append(os.Environ(), "NATSTEST_CHILD=1", EnvServer+"="+bin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	pid := 0
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		t.Fatalf("the child printed no process id:\n%s", out)
	}
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server (process %d) outlived its test process", pid)
		}
	}
}

// alive says whether process pid runs (a zombie, dead but not yet reaped by its new parent, does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's name, in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}
