package structured

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ExtractError says why no JSON document was taken from a reply: none was found, or several
// were (Found counts the JSON documents found, Tagged the ```json blocks that do not parse).
type ExtractError struct {
	Found  int
	Tagged int
	Detail string // a ```json block's parse error, when that is the only candidate
}

func (e *ExtractError) Error() string {
	switch {
	case e.Found > 1:
		return fmt.Sprintf("the reply holds %d JSON documents (fenced blocks); give exactly one", e.Found)
	case e.Tagged > 0:
		return "the ```json block in the reply is not valid JSON: " + e.Detail
	}
	return "no JSON found: the reply is neither a JSON document alone nor holds one in a ```json fenced block"
}

// Extract takes the JSON document out of an agent's reply, by these rules, in order:
//  1. The whole reply, blanks trimmed, is one JSON document: that is the answer.
//  2. Otherwise the fenced code blocks (``` or ~~~, as in Markdown) are the candidates: those
//     tagged json, and untagged ones whose text starts with { or [. Exactly one of them must be
//     valid JSON: that is the answer. Two or more valid ones are an error naming how many were
//     found (the agent is asked for one); none is an error too, with the parse error of a ```json
//     block when there was one.
//
// Text outside the blocks is ignored; JSON inside prose without a fence is not looked for.
func Extract(reply string) ([]byte, error) {
	whole := strings.TrimSpace(reply)
	if whole != "" && validJSON(whole) {
		return []byte(whole), nil
	}
	var found []string
	tagged, detail := 0, ""
	for _, b := range fencedBlocks(reply) {
		body := strings.TrimSpace(b.body)
		isJSON := b.info == "json"
		if !isJSON && (b.info != "" || !(strings.HasPrefix(body, "{") || strings.HasPrefix(body, "["))) {
			continue
		}
		if validJSON(body) {
			found = append(found, body)
			continue
		}
		if isJSON {
			tagged++
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				detail = err.Error()
			}
		}
	}
	if len(found) == 1 {
		return []byte(found[0]), nil
	}
	return nil, &ExtractError{Found: len(found), Tagged: tagged, Detail: detail}
}

// validJSON is json.Valid(s): the quick reader first, several times faster (a reply of 100 KB:
// most of Extract's time was json.Valid), and json.Valid only for what it does not pass (it stops
// at nesting that encoding/json still reads).
func validJSON(s string) bool {
	if t := strings.TrimLeft(s, " \t\r\n"); t == "" || !strings.ContainsAny(t[:1], "{[\"-0123456789tfn") {
		return false // not even the start of a JSON value: most prose
	}
	return quickCheck(nil, s) || json.Valid([]byte(s))
}

// block is one fenced code block: its info string's first word (lower case) and its text.
type block struct {
	info string
	body string
}

// fencedBlocks finds the fenced code blocks of s: an opening line of three or more ` or ~ (indented
// by at most three spaces) with an optional info string, up to a line of at least as many of the
// same character and nothing else, or to the end of s (an unclosed block runs to the end, as in
// Markdown).
func fencedBlocks(s string) []block {
	var out []block
	var cur *block
	var fence string
	bodyStart := 0 // where the current block's text starts in s
	for pos := 0; pos < len(s); {
		lineStart := pos
		line := s[pos:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line, pos = line[:i], pos+i+1
		} else {
			pos = len(s)
		}
		trimmed := strings.TrimRight(line, " \t\r")
		indent := len(trimmed) - len(strings.TrimLeft(trimmed, " "))
		marker := strings.TrimLeft(trimmed, " ")
		if cur == nil {
			if indent > 3 {
				continue
			}
			f := fenceOf(marker)
			if f == "" {
				continue
			}
			info := strings.TrimSpace(marker[len(f):])
			if f[0] == '`' && strings.Contains(info, "`") {
				continue // an inline code span, not a fence
			}
			if i := strings.IndexAny(info, " \t{"); i >= 0 {
				info = info[:i]
			}
			cur, fence, bodyStart = &block{info: strings.ToLower(info)}, f, pos
			continue
		}
		if indent <= 3 && strings.HasPrefix(marker, fence) && strings.Trim(marker, fence[:1]) == "" {
			// The lines between the fences, each with its newline: a slice of s, not a copy.
			cur.body = s[bodyStart:lineStart]
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		cur.body = s[bodyStart:]
		out = append(out, *cur)
	}
	return out
}

// fenceOf is the run of three or more ` or ~ that line starts with, or "".
func fenceOf(line string) string {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return line[:n]
}
