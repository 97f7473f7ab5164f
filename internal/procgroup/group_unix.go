//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"
)

// groupSweep says whether what is left of a group can be ended after its leader has exited.
const groupSweep = true

// textBusy reports whether a start failed because the executable is open for writing.
func textBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }

// newGroup makes the command, once started, the leader of a process group of its own, and on
// Linux one the kernel kills should qkit die without stopping it (setDeathSignal).
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends SIGTERM (SIGKILL when kill is set) to the group pgid leads. A group with
// nobody left in it is not an error.
func signalGroup(pgid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, sig)
}

// signalNames are the names of the signals that end processes, as ACP's TerminalExitStatus and
// the shells spell them.
var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT:   "SIGABRT",
	syscall.SIGALRM:   "SIGALRM",
	syscall.SIGBUS:    "SIGBUS",
	syscall.SIGFPE:    "SIGFPE",
	syscall.SIGHUP:    "SIGHUP",
	syscall.SIGILL:    "SIGILL",
	syscall.SIGINT:    "SIGINT",
	syscall.SIGKILL:   "SIGKILL",
	syscall.SIGPIPE:   "SIGPIPE",
	syscall.SIGPROF:   "SIGPROF",
	syscall.SIGQUIT:   "SIGQUIT",
	syscall.SIGSEGV:   "SIGSEGV",
	syscall.SIGSYS:    "SIGSYS",
	syscall.SIGTERM:   "SIGTERM",
	syscall.SIGTRAP:   "SIGTRAP",
	syscall.SIGUSR1:   "SIGUSR1",
	syscall.SIGUSR2:   "SIGUSR2",
	syscall.SIGVTALRM: "SIGVTALRM",
	syscall.SIGXCPU:   "SIGXCPU",
	syscall.SIGXFSZ:   "SIGXFSZ",
}

// signalName is sig's name ("SIGTERM"), or "signal N" for one without a name here.
func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return "signal " + strconv.Itoa(int(sig))
}
