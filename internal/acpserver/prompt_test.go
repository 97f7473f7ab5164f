package acpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
)

func TestUTF8Chunks(t *testing.T) {
	t.Parallel()
	var got []string
	u := utf8Chunks{emit: func(s string) { got = append(got, s) }}
	b := []byte("añb€c")
	for i := range b {
		u.write(b[i : i+1])
	}
	u.flush()
	for _, s := range got {
		if !utf8.ValidString(s) {
			t.Fatalf("chunk %q splits a character (all: %q)", s, got)
		}
	}
	if strings.Join(got, "") != "añb€c" {
		t.Fatalf("chunks %q", got)
	}
}

// FuzzPromptText feeds arbitrary session/prompt content (as a client would send it) through the
// SDK's decoder and PromptText: no panic, and text blocks always reach q unchanged.
func FuzzPromptText(f *testing.F) {
	for _, seed := range []string{
		`[{"type":"text","text":"hi"}]`,
		`[{"type":"resource_link","uri":"file:///a","name":"a"}]`,
		`[{"type":"resource","resource":{"uri":"file:///b","mimeType":"text/plain","text":"x\"<>"}}]`,
		`[{"type":"resource","resource":{"uri":"file:///c","blob":"AAAA"}}]`,
		`[{"type":"image","data":"aGk=","mimeType":"image/png"}]`,
		`[{"type":"audio","data":"aGk=","mimeType":"audio/wav"}]`,
		`[]`, `[{}]`, `[{"type":"text"}]`, `[{"type":"resource_link","uri":"\"><x"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var blocks []acp.ContentBlock
		if json.Unmarshal(data, &blocks) != nil {
			return
		}
		text, err := PromptText(blocks)
		if err != nil {
			return
		}
		for _, b := range blocks {
			if b.Text != nil && !strings.Contains(text, b.Text.Text) {
				t.Fatalf("text block %q missing from %q", b.Text.Text, text)
			}
			if b.ResourceLink != nil && !strings.Contains(text, `<resource uri="`+xmlAttr(b.ResourceLink.Uri)+`"/>`) {
				t.Fatalf("resource link %q missing from %q", b.ResourceLink.Uri, text)
			}
		}
	})
}
