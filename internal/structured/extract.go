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
	if whole != "" && json.Valid([]byte(whole)) {
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
		if json.Valid([]byte(body)) {
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
	var body strings.Builder
	for len(s) > 0 {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
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
			cur, fence = &block{info: strings.ToLower(info)}, f
			body.Reset()
			continue
		}
		if indent <= 3 && strings.HasPrefix(marker, fence) && strings.Trim(marker, fence[:1]) == "" {
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if cur != nil {
		cur.body = body.String()
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
