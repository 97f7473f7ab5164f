package fakeq

import (
	"fmt"
	"os"
	"time"
)

// The model list's own knobs (kiro's `chat --list-models`), for tests of a slow or stopped list:
//
//	FAKEQ_LIST_GRANDCHILD=file  start a grandchild that sleeps a minute, holding the list's stdout,
//	                            and write its PID to file (before any wait)
//	FAKEQ_LIST_WAIT=file        answer only once file exists (the test says when the list is
//	                            ready; no clock decides)

// listWait is what the list does before it answers.
func listWait() int {
	if f := os.Getenv("FAKEQ_LIST_GRANDCHILD"); f != "" {
		if err := startGrandchild(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 98
		}
	}
	if f := os.Getenv("FAKEQ_LIST_WAIT"); f != "" {
		for deadline := time.Now().Add(time.Hour); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(f); err == nil {
				return 0
			}
		}
		return 1
	}
	return 0
}
