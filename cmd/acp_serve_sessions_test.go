//go:build !qkit_lite

package cmd

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// TestACPServeRecordsToolsAndUsage: a turn of acp serve, on the text path and on the proxy, is
// stored with its tool calls (name, how they ended) and, when the agent reported it, its usage,
// as `sessions show --json` gives them. The editor is the ACP SDK's client; it allows
// the tool, or refuses it.
func TestACPServeRecordsToolsAndUsage(t *testing.T) {
	rows := map[string]struct {
		editor string
		want   sessions.ToolCall
	}{
		"allowed": {"allow_once", sessions.ToolCall{Name: "shell", Status: "completed"}},
		"refused": {"reject_once", sessions.ToolCall{Name: "shell", Status: "failed", Denied: true}},
	}
	for name, row := range rows {
		for _, b := range []parityBackend{pbChat, pbACP} {
			t.Run(name+"/"+string(b), func(t *testing.T) {
				i := slices.IndexFunc(parityScenarios(), func(sc parityScenario) bool { return sc.name == "tool use" })
				if i < 0 {
					t.Fatal("the parity table has no row \"tool use\"")
				}
				sc := parityScenarios()[i] // the shell tool on each backend
				sc.editor = row.editor
				a, _ := parityApp(t, sc, b, "")
				o := parityACPServe(t, a, sc)
				if o.session == "" {
					t.Fatalf("no session: %s", o)
				}
				out := &bytes.Buffer{} // acp serve had stdout
				a.IO.Out = out
				if err := runSessionsShow(t.Context(), a, o.session, &sessionsShowOptions{asJSON: true}); err != nil {
					t.Fatal(err)
				}
				var e sessions.Export
				if err := json.Unmarshal(out.Bytes(), &e); err != nil {
					t.Fatalf("sessions show --json: %v\n%s", err, out)
				}
				var reply *sessions.ExportedMessage
				for i := range e.Transcript {
					if e.Transcript[i].Role == sessions.RoleAgent {
						reply = &e.Transcript[i]
					}
				}
				if reply == nil || len(reply.Tools) != 1 {
					t.Fatalf("the reply's tools: %s", out)
				}
				got := reply.Tools[0]
				if got.Name != row.want.Name || got.Status != row.want.Status || got.Denied != row.want.Denied {
					t.Errorf("tool %+v, want %+v", got, row.want)
				}
				// kiro-cli acp reports its cost (_kiro.dev/metadata); kiro-cli chat reports none.
				switch {
				case b == pbACP && (reply.Usage == nil || reply.Usage.Credits == 0 || reply.Usage.ContextPercent == 0):
					t.Errorf("usage %+v, want kiro's credits and context share", reply.Usage)
				case b == pbChat && reply.Usage != nil:
					t.Errorf("usage %+v on the chat backend, which reports none", reply.Usage)
				}
			})
		}
	}
}
