package acpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// sdkLine is how the SDK encodes a session/update notification: what appendChunk must equal.
func sdkLine(t testing.TB, id string, u acp.SessionUpdate) map[string]any {
	t.Helper()
	params, err := json.Marshal(acp.SessionNotification{SessionId: acp.SessionId(id), Update: u})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"jsonrpc":"2.0","method":"session/update","params":`+string(params)+`}`), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func decodeLine(t testing.TB, line []byte) map[string]any {
	t.Helper()
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return m
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestAppendChunkIsWhatTheSDKSends(t *testing.T) {
	t.Parallel()
	id := "0b7f3c52-1111-4000-8000-000000000000"
	for _, text := range []string{"", "hello\n", "quote \" back\\slash \t tab \x01 ctl", "<b>&</b>", "héllo ✓ \u2028 \u2029", "bad \xff utf8 \xe2\x82"} {
		if got, want := decodeLine(t, appendTextChunk(nil, id, kindAgentChunk, text)), sdkLine(t, id, acp.UpdateAgentMessageText(text)); !sameJSON(got, want) {
			t.Errorf("agent chunk %q:\n got %v\nwant %v", text, got, want)
		}
		if got, want := decodeLine(t, appendTextChunk(nil, id, kindUserChunk, text)), sdkLine(t, id, acp.UpdateUserMessageText(text)); !sameJSON(got, want) {
			t.Errorf("user chunk %q:\n got %v\nwant %v", text, got, want)
		}
	}
	link := acp.ResourceLinkBlock("main.go", "file:///w/main.go")
	raw, _ := json.Marshal(link)
	want := sdkLine(t, id, acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: link}})
	if got := decodeLine(t, appendChunk(nil, id, kindUserChunk, raw)); !sameJSON(got, want) {
		t.Errorf("resource link chunk:\n got %v\nwant %v", got, want)
	}
}
