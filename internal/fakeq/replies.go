package fakeq

// Knobs for runs that prompt more than once (qkit ask --schema's retries), every flavour:
//
//	FAKEQ_REPLIES=file     the replies, in order, separated by lines "%%": each chat run, or each
//	                       ACP prompt, takes the next one (FILE.n keeps the count across runs);
//	                       the last one repeats. Sent before the other output knobs' text.
//	FAKEQ_ACP_SESSIONS=file  (acp) append one line per session/new, session/load and
//	                       session/prompt: "new|load|prompt session N (ID)", N numbering the
//	                       distinct sessions this file has seen from 1, so a script can check that
//	                       a retry went to the first session; and "start process PID" each time
//	                       the agent starts, so it can check that the retry used the same process
//	FAKEQ_ACP_CREDITS=x    (acp) a _kiro.dev/metadata with x credits for the session before the
//	                       reply (the per-turn metadata after it still reports 0.05)

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// nextReply is FAKEQ_REPLIES' next reply, or "" when the knob is not set.
func nextReply() string {
	file := os.Getenv("FAKEQ_REPLIES")
	if file == "" {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "FAKEQ_REPLIES: " + err.Error() + "\n"
	}
	replies := strings.Split(string(data), "\n%%\n")
	countFile := file + ".n"
	b, _ := os.ReadFile(countFile)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	_ = os.WriteFile(countFile, []byte(strconv.Itoa(n+1)), 0o600)
	return replies[min(n, len(replies)-1)]
}

// recordSession appends kind and the session's number to FAKEQ_ACP_SESSIONS.
func recordSession(kind, id string) {
	file := os.Getenv("FAKEQ_ACP_SESSIONS")
	if file == "" {
		return
	}
	data, _ := os.ReadFile(file)
	seen := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.LastIndex(line, " ("); i >= 0 && strings.HasSuffix(line, ")") {
			prev := line[i+2 : len(line)-1]
			if _, ok := seen[prev]; !ok {
				seen[prev] = len(seen) + 1
			}
		}
	}
	n, ok := seen[id]
	if !ok {
		n = len(seen) + 1
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s session %d (%s)\n", kind, n, id)
}

// recordStart appends the agent process's start to FAKEQ_ACP_SESSIONS.
func recordStart() {
	file := os.Getenv("FAKEQ_ACP_SESSIONS")
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "start process %d\n", os.Getpid())
}
