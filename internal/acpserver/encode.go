package acpserver

import (
	"github.com/qkit-cli/qkit/internal/stdiorpc"
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
	buf = stdiorpc.AppendJSONString(buf, sessionID)
	buf = append(buf, `,"update":{"sessionUpdate":"`...)
	buf = append(buf, kind...)
	buf = append(buf, `","content":`...)
	buf = append(buf, content...)
	return append(buf, "}}}\n"...)
}

// appendTextChunk is appendChunk with a text content block.
func appendTextChunk(buf []byte, sessionID, kind, text string) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	buf = stdiorpc.AppendJSONString(buf, sessionID)
	buf = append(buf, `,"update":{"sessionUpdate":"`...)
	buf = append(buf, kind...)
	buf = append(buf, `","content":{"type":"text","text":`...)
	buf = stdiorpc.AppendJSONString(buf, text)
	return append(buf, "}}}}\n"...)
}
