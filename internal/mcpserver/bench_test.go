package mcpserver_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qkit-cli/qkit/internal/mcpserver"
	"github.com/qkit-cli/qkit/internal/mcpserver/mcptest"
)

// BenchmarkHelpCall is one qkit_help call over an in-memory connection: the server's own cost per
// call, without process start or pipes.
func BenchmarkHelpCall(b *testing.B) {
	cs := mcptest.Connect(b, &mcpserver.Deps{App: mcptest.NewApp(b, nil)})
	params := &mcp.CallToolParams{Name: "qkit_help", Arguments: map[string]any{"tool_name": "qkit_help"}}
	for b.Loop() {
		if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}
