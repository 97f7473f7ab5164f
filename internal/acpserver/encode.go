package acpserver

import (
	"unicode/utf8"
)

// The SDK encodes every session/update through its union types: the variant is marshalled,
// unmarshalled into a map, the discriminator added, the map marshalled again (and the content
// block inside goes the same way), then the whole message is compacted once more. For the two
// updates qkit sends by the thousand, a message chunk of a reply and a replayed transcript, that
// was most of the server's CPU and garbage. appendChunk writes the same JSON directly.

// Kinds of message chunk (the sessionUpdate discriminator).
const (
	kindUserChunk  = "user_message_chunk"
	kindAgentChunk = "agent_message_chunk"
)

// appendChunk appends one session/update notification line carrying a message chunk of kind,
// whose content is the JSON content block content, to buf.
func appendChunk(buf []byte, sessionID, kind string, content []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	buf = appendJSONString(buf, sessionID)
	buf = append(buf, `,"update":{"sessionUpdate":"`...)
	buf = append(buf, kind...)
	buf = append(buf, `","content":`...)
	buf = append(buf, content...)
	return append(buf, "}}}\n"...)
}

// appendTextChunk is appendChunk with a text content block.
func appendTextChunk(buf []byte, sessionID, kind, text string) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	buf = appendJSONString(buf, sessionID)
	buf = append(buf, `,"update":{"sessionUpdate":"`...)
	buf = append(buf, kind...)
	buf = append(buf, `","content":{"type":"text","text":`...)
	buf = appendJSONString(buf, text)
	return append(buf, "}}}}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, as encoding/json writes it apart from HTML
// escaping (which JSON does not need): invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are
// escaped for JavaScript readers.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
