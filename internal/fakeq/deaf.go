package fakeq

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// deafEnv is the knob of an agent that will not stop when asked: FAKEQ_DEAF=file.
//
// The fake then ignores SIGTERM, SIGINT and SIGHUP (only SIGKILL ends it) and appends what
// happens to it to file, one line each: "pid N" as it starts, the name of each signal it gets
// ("SIGTERM"), and in acp mode "stdin closed" at the end of its input, after which it lingers a
// minute instead of exiting. The order of the lines says how qkit stopped it: straight to
// SIGTERM, or its stdin closed first and a wait.
const deafEnv = "FAKEQ_DEAF"

// beDeaf starts ignoring the stop signals when FAKEQ_DEAF is set.
func beDeaf() {
	file := os.Getenv(deafEnv)
	if file == "" {
		return
	}
	deafNote("pid " + strconv.Itoa(os.Getpid()))
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range ch {
			if s, ok := sig.(syscall.Signal); ok {
				deafNote(signalNames[s])
			}
		}
	}()
}

var signalNames = map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}

// deafAtEOF is the end of an ACP agent's input under FAKEQ_DEAF: noted, then a minute more.
func deafAtEOF() {
	if os.Getenv(deafEnv) == "" {
		return
	}
	deafNote("stdin closed")
	time.Sleep(time.Minute)
}

// deafNote appends one line to FAKEQ_DEAF's file.
func deafNote(line string) {
	f, err := os.OpenFile(os.Getenv(deafEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeq:", err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}
