package mcpserver_test

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/natsstore"
)

// With questions.store=nats the tool names the server when it cannot reach it, and uses it on the
// next call once it is up (nothing is cached, nothing falls back to files); the answer given through
// another connection to the bucket comes back to the Go SDK client.
func TestQuestionsToolOverNATS(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	a, _, _ := questionsApp(t, map[string]string{"QKIT_QUESTIONS_STORE": "nats", "QKIT_QUESTIONS_NATS_URL": url})
	cs := mcptest.ConnectWith(t, &mcpserver.Deps{App: a, QuestionStores: questions.Kinds{"nats": natsstore.Open}}, nil)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "the NATS server at "+url) {
		t.Fatalf("without a server: %v %v", textOf(res), err)
	}

	srv, err := natstest.Start(natstest.Options{Port: port, JetStream: true, StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	person, err := natsstore.New(natsstore.Config{URL: url, Installation: "default"}, questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = person.Close() })
	done := askAsync(t.Context(), cs, &mcp.CallToolParams{Name: "ask_user_questions", Arguments: langArgs})
	s := nextPending(t, person)
	if _, err := person.Answer(s.ID, []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Docs"}}}, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(textOf(r.res), "→ Go") {
		t.Fatalf("%v %v", textOf(r.res), r.err)
	}
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
