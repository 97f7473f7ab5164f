package fakeq

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// deafEnv is the knob of an agent that will not stop when asked: FAKEQ_DEAF=file.
//
// Every run of the fake then ignores SIGTERM, SIGINT and SIGHUP (only SIGKILL ends it), and in
// acp mode lingers a minute after the end of its input instead of exiting. The one that runs a
// turn (a chat reply, an ACP prompt) appends what happens to it to file from then on, one line
// each: "pid N" as the turn starts, the name of each signal it gets ("SIGTERM"), and in acp mode
// "stdin closed" at the end of its input. The order of the lines says how qkit stopped it:
// straight to SIGTERM, or its stdin closed first and a wait. (The runs that answer qkit's
// questions, whoami, the model list, an ACP probe, write nothing: they end the gentle way.)
const deafEnv = "FAKEQ_DEAF"

// beDeaf starts ignoring the stop signals when FAKEQ_DEAF is set.
func beDeaf() {
	file := os.Getenv(deafEnv)
	if file == "" {
		return
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range ch {
			if s, ok := sig.(syscall.Signal); ok && inTurn.Load() {
				deafNote(signalNames[s])
			}
		}
	}()
}

var signalNames = map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}

// inTurn is set once this run has started a turn: only then does it note what happens to it.
var inTurn atomic.Bool

// deafTurn marks the start of a turn under FAKEQ_DEAF: "pid N", the first time.
func deafTurn() {
	if os.Getenv(deafEnv) == "" || inTurn.Load() {
		return
	}
	deafNote("pid " + strconv.Itoa(os.Getpid()))
	inTurn.Store(true)
}

// deafAtEOF is the end of an ACP agent's input under FAKEQ_DEAF: noted, then a minute more.
func deafAtEOF() {
	if os.Getenv(deafEnv) == "" {
		return
	}
	if inTurn.Load() {
		deafNote("stdin closed")
	}
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
