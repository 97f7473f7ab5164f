package questions

import (
	"strings"
)

// AnswerHint names the ways a person can answer a set, for the messages that tell an assistant (and
// through it the person) where the set waits: the client's own form when it shows one, a terminal
// with `qkit questions wait`, and the web page when one runs (pageURL, without its token). The
// ways are joined as a list in English, the last one after "or":
//
//	with qkit questions wait
//	with the form in your client or with qkit questions wait
//	with the form in your client, with qkit questions wait or on the web page at http://127.0.0.1:PORT/
//
// It is the one place these words are written.
func AnswerHint(inForm bool, pageURL string) string {
	var ways []string
	if inForm {
		ways = append(ways, "with the form in your client")
	}
	ways = append(ways, "with qkit questions wait")
	if pageURL != "" {
		ways = append(ways, "on the web page at "+pageURL)
	}
	if len(ways) == 1 {
		return ways[0]
	}
	return strings.Join(ways[:len(ways)-1], ", ") + " or " + ways[len(ways)-1]
}
