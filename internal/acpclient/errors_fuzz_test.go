package acpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
)

// FuzzAgentError: whatever error object the agent answers with, the message qkit prints from it
// is UTF-8 without escapes or control characters but newline and tab, and still names the code.
func FuzzAgentError(f *testing.F) {
	f.Add([]byte(`{"code":-32603,"message":"Internal error","data":"model unavailable"}`))
	f.Add([]byte(`{"code":-32000,"message":"Authentication required","data":{"details":"run kiro-cli login"}}`))
	f.Add([]byte(`{"code":-32603,"message":"Internal error","data":{"error":"\u001b[31mboom\u001b[0m\r\nline two"}}`))
	f.Add([]byte(`{"code":-32602,"message":"\u001b]0;retitled\u0007Invalid params","data":{"path":["a",1],"x":null}}`))
	f.Add([]byte(`{"code":1,"message":"\u009b2J\u0000","data":[1,2,3]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var re acp.RequestError
		if json.Unmarshal(raw, &re) != nil {
			return
		}
		err := agentError(fmt.Errorf("session/prompt: %w", &re))
		var ae *AgentError
		if !errors.As(err, &ae) {
			t.Fatalf("agentError(%s) = %T", raw, err)
		}
		if ae.Code != re.Code {
			t.Fatalf("code %d became %d", re.Code, ae.Code)
		}
		msg := ae.Error()
		if !strings.HasPrefix(msg, fmt.Sprintf("the agent answered error %d: ", re.Code)) || !utf8.ValidString(msg) {
			t.Fatalf("message %q", msg)
		}
		for _, r := range msg {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
				t.Fatalf("message holds control character %U: %q", r, msg)
			}
		}
	})
}
