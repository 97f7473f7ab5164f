package questions

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Process identifies the process that owns a session (the one waiting for its answer) or claims it
// (a `questions wait` terminal walking the person through it). Start guards against a reused PID.
type Process struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	// Boot is the kernel's boot id (Linux). Two machines with the same host name (containers, CI
	// runners sharing a store over NATS) differ here, so one never takes the other's PIDs for its own.
	Boot string `json:"boot,omitempty"`
}

// bootID is this machine's boot id, or "" where there is none.
var bootID = sync.OnceValue(func() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
})

// self is the running process, read once: a server holding many sets asks about itself often.
var self = sync.OnceValue(func() Process {
	pid := os.Getpid()
	host, _ := os.Hostname()
	return Process{PID: pid, Start: processStart(pid), Host: host, Boot: bootID()}
})

// Self describes the running process.
func Self() Process { return self() }

// Local reports whether the process ran on this machine in this boot, so that Gone can tell.
func (p Process) Local() bool {
	me := self()
	return p.PID > 0 && (p.Host == "" || me.Host == "" || p.Host == me.Host) && (p.Boot == "" || me.Boot == "" || p.Boot == me.Boot)
}

// Gone reports whether the process has certainly exited. A process on another host or another boot of
// the kernel, or one recorded without a PID, is never reported gone: qkit cannot know (such a set
// ends at its expiry instead; see ownersChange).
func (p Process) Gone() bool {
	if p.PID <= 0 || p == self() {
		return false // unknown, or this very process
	}
	if host := self().Host; p.Host != "" && host != "" && p.Host != host {
		return false
	}
	if b := bootID(); p.Boot != "" && b != "" && p.Boot != b {
		return false
	}
	if !processAlive(p.PID) {
		return true
	}
	state, start := procStat(p.PID)
	if state == "Z" || state == "X" {
		return true // exited, not yet reaped
	}
	if p.Start != "" && start != "" && start != p.Start {
		return true // the PID now belongs to another process
	}
	return false
}

// processStart returns the start time of pid in clock ticks since boot (Linux), or "" elsewhere.
func processStart(pid int) string {
	_, start := procStat(pid)
	return start
}

// procStat reads the state and start time of pid from /proc (Linux); both are "" elsewhere.
func procStat(pid int) (state, start string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	s := string(data)
	// The command name (field 2) may hold spaces and parentheses; fields resume after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", ""
	}
	fields := strings.Fields(s[i+1:])
	// Field 3 (state) is the first after the command name, field 22 (starttime) the 20th.
	if len(fields) < 20 {
		return "", ""
	}
	return fields[0], fields[19]
}
