package acpserver

import (
	"io"
	"strings"
	"testing"
	"time"
)

// readAll reads h to the end in a goroutine and reports when it got there.
func readAll(h *eofHold) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.ReadAll(h)
		close(done)
	}()
	return done
}

func TestEOFHoldWaitsForAnswers(t *testing.T) {
	h := newEOFHold(strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`+"\n"), time.Hour)
	done := readAll(h)
	select {
	case <-done:
		t.Fatal("the end of stdin was not held while initialize was unanswered")
	case <-time.After(50 * time.Millisecond):
	}
	h.answered([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}`))
	h.answered([]byte(`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{}}`))
	h.answered([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	<-done // the prompt (id 2) is not waited for
}

func TestEOFHoldGivesUpAfterGrace(t *testing.T) {
	h := newEOFHold(strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"session/new","params":{}}`+"\n"), time.Millisecond)
	<-readAll(h)
}

func TestEOFHoldIgnoresGarbage(t *testing.T) {
	h := newEOFHold(strings.NewReader("not json\n{\"id\":\n[1,2]\n"), time.Hour)
	<-readAll(h)
}

func TestEOFHoldInitialized(t *testing.T) {
	h := newEOFHold(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"), time.Hour)
	buf := make([]byte, 4096)
	if _, err := h.Read(buf); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() {
		h.initialized(t.Context())
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("initialized returned before initialize was answered")
	case <-time.After(50 * time.Millisecond):
	}
	h.answered([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	<-waited
}
