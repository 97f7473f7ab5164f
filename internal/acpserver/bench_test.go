package acpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// BenchmarkLoadReplay measures session/load of a 10,000-message transcript over an OS pipe, read
// by a client that only splits lines (what qkit itself costs, not a client's decoding).
func BenchmarkLoadReplay(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := sessions.Open(ctx, filepath.Join(dir, "qkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	id := "5e1b1e2a-0000-4000-8000-00000000bench"
	if err := store.Create(ctx, sessions.SessionRecord{ID: id, Cwd: dir, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		q := fmt.Sprintf("question %d: why does the build take so long on this machine?", i)
		a := strings.Repeat(fmt.Sprintf("answer %d explains the build. ", i), 8)
		if err := store.AppendTurn(ctx, id, sessions.Turn{Prompt: q, Reply: a}, now); err != nil {
			b.Fatal(err)
		}
	}
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, testOptions(store), inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	wait := func(reqID int) int {
		n := 0
		want := []byte(fmt.Sprintf(`"id":%d`, reqID))
		for lines.Scan() {
			l := lines.Bytes()
			if bytes.Contains(l, []byte(`"method":"session/update"`)) {
				n++
				continue
			}
			if bytes.Contains(l, want) {
				return n
			}
		}
		b.Fatal("no response")
		return 0
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	wait(1)
	params, _ := json.Marshal(map[string]any{"sessionId": id, "cwd": dir, "mcpServers": []any{}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		io.WriteString(inW, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/load","params":%s}`+"\n", i+2, params))
		if n := wait(i + 2); n < 10000 {
			b.Fatalf("%d updates", n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "updates/s")
	inW.Close()
	<-done
}
