package agent

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
)

// BenchmarkRun is one run of the fake q printing a line through the runner; BenchmarkExecDirect
// is the same process run with a bare exec.Cmd, the floor the runner's overhead is measured from.
func BenchmarkRun(b *testing.B) {
	b.Setenv("FAKEQ_AS_Q", "1")
	b.Setenv("FAKEQ_OUTPUT", "the answer\n")
	l := Limits{Command: os.Args[0], MaxResponseSize: 2 << 20, StripANSI: true}
	for b.Loop() {
		if _, err := Run(context.Background(), l, Request{Prompt: "hello"}, func([]byte) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecDirect(b *testing.B) {
	b.Setenv("FAKEQ_AS_Q", "1")
	b.Setenv("FAKEQ_OUTPUT", "the answer\n")
	for b.Loop() {
		c := exec.Command(os.Args[0], "chat", "--no-interactive", "hello")
		c.Stdout = io.Discard
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextParser reads a typical stripped reply with a tool block: the cost of telling the
// reply from the banners, per byte of stdout.
func BenchmarkTextParser(b *testing.B) {
	out := []byte(sampleOut)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		p := newTextParser(false, func(Event) {})
		p.Write(out)
		p.close(true)
	}
}

// BenchmarkTextParserReply is the common case: reply lines after the prefix, one read each.
func BenchmarkTextParserReply(b *testing.B) {
	line := []byte("Here is the answer to your question, with some bold text and a little more.\n")
	p := newTextParser(false, func(Event) {})
	p.Write([]byte("> "))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		p.Write(line)
	}
}
