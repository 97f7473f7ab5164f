package acpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// PromptText turns a session/prompt's content blocks into the text q receives: text as is, a
// resource link as <resource uri="..."/>, an embedded text resource as
// <resource uri="..." mime-type="...">content</resource>. Images, audio and binary resources are
// refused (the agent advertises neither image nor audio), as is a prompt with nothing in it.
func PromptText(blocks []acp.ContentBlock) (string, error) {
	return promptText(blocks, acp.PromptCapabilities{})
}

// promptText is PromptText for an agent that takes what caps say (the proxy path's agent): an
// image or audio block it takes stands in the text as <image mime-type="..."/> (or <audio .../>),
// for the transcript; the agent gets the block itself.
func promptText(blocks []acp.ContentBlock, caps acp.PromptCapabilities) (string, error) {
	var b strings.Builder
	for i, c := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, `<resource uri="%s"/>`, xmlAttr(c.ResourceLink.Uri))
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			fmt.Fprintf(&b, `<resource uri="%s"`, xmlAttr(r.Uri))
			if r.MimeType != nil && *r.MimeType != "" {
				fmt.Fprintf(&b, ` mime-type="%s"`, xmlAttr(*r.MimeType))
			}
			fmt.Fprintf(&b, ">%s</resource>", r.Text)
		case c.Resource != nil:
			return "", fmt.Errorf("prompt block %d: binary embedded resources are not supported; embed text or send a resource_link", i+1)
		case c.Image != nil && caps.Image:
			fmt.Fprintf(&b, `<image mime-type="%s"/>`, xmlAttr(c.Image.MimeType))
		case c.Audio != nil && caps.Audio:
			fmt.Fprintf(&b, `<audio mime-type="%s"/>`, xmlAttr(c.Audio.MimeType))
		case c.Image != nil:
			return "", fmt.Errorf("prompt block %d: images are not supported (promptCapabilities.image is false)", i+1)
		case c.Audio != nil:
			return "", fmt.Errorf("prompt block %d: audio is not supported (promptCapabilities.audio is false)", i+1)
		default:
			return "", fmt.Errorf("prompt block %d: unknown content type", i+1)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", fmt.Errorf("prompt is empty")
	}
	return b.String(), nil
}

// userPrompt is a session/prompt as a turn needs it: the text q is given, and for the transcript
// the content blocks as the client sent them (nil when they are one text block, which the text
// already is), so session/load replays resources as resources.
type userPrompt struct {
	text   string
	blocks json.RawMessage
	// content is the prompt as the client sent it (the proxy path passes it on).
	content []acp.ContentBlock
}

func newUserPrompt(blocks []acp.ContentBlock, caps acp.PromptCapabilities) (userPrompt, error) {
	text, err := promptText(blocks, caps)
	if err != nil {
		return userPrompt{}, err
	}
	p := userPrompt{text: text, content: blocks}
	if len(blocks) != 1 || blocks[0].Text == nil {
		if p.blocks, err = json.Marshal(blocks); err != nil {
			return userPrompt{}, fmt.Errorf("prompt: %w", err)
		}
	}
	return p, nil
}

// xmlAttr escapes s for a double-quoted attribute. The content of an embedded resource is left as
// the client sent it: q reads it as text, and escaping would change code samples.
func xmlAttr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}
