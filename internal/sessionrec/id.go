package sessionrec

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// maxAdoptedID is the longest agent session id a qkit session takes as its own id: real agents'
// ids are uuids (36 bytes); the id is printed in lists, messages and completions.
const maxAdoptedID = 128

// agentIDSpace is the namespace of the uuids SessionIDFor derives from agent session ids.
var agentIDSpace = uuid.MustParse("6f0b6a52-3c1e-4f53-9a0e-8f1d2c7b5e41")

// SessionIDFor is the id of a new qkit session recorded with the agent's session agentSession (ACP
// backend). The agent's own id, when it is a token safe to print, so `ask --session` takes the id
// the run showed and the agent knows: text a terminal shows as written (termtext.VisibleLine leaves
// it unchanged), printable characters only (no space, no invisible format character), at most 128
// bytes. Anything else came from an agent that cannot be trusted with the terminal of everyone who
// lists sessions, so the session gets a uuid derived from the agent's id instead; the agent's id
// stays in SessionRecord.AgentSession (for session/load), which nothing prints unfiltered. Derived,
// not random: the light binary's spool and the store (Store.Record, the spool's intake) name the
// same session the same way without talking to each other.
func SessionIDFor(agentSession string) string {
	if SafeID(agentSession) {
		return agentSession
	}
	return uuid.NewSHA1(agentIDSpace, []byte(agentSession)).String()
}

// SafeID reports whether id may be printed as it is wherever qkit shows a session id: not empty,
// at most 128 bytes, valid UTF-8 of printable characters other than spaces.
func SafeID(id string) bool {
	if id == "" || len(id) > maxAdoptedID || !utf8.ValidString(id) || termtext.VisibleLine(id) != id {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) < 0
}
