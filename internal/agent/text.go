package agent

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// The agent CLI's stdout in `chat --no-interactive` is not only the reply:
// each response starts with a coloured "> ", and before a tool runs the CLI prints a banner line
//
//	🛠️  Using tool: NAME[ from mcp server SERVER][ (trusted)]
//
// followed by a description block (" ⋮ ", " ● Reading file: ...", " ● Completed in 0.1s") that
// lasts until the next response's "> ". textParser reads the ANSI-stripped stdout as it arrives
// and splits it into events: the reply text (EventMessage), a tool call for each banner
// (EventToolCall) and its end (EventToolCallUpdate, completed or failed, denied when the agent
// refused it). A line is held back only while its start could still be a banner or a prefix, so
// reply text streams on at once.
type textParser struct {
	emit func(Event)
	// raw sends stdout as printed (banners and prefixes included) as the message; tool events
	// are still parsed.
	raw bool

	pending []byte // the start of the current line, while it is undecided
	mode    int    // what the rest of the current line is
	// expectPrefix is set at the start of the output and after a tool block: the next response
	// starts with "> ", which is not part of the reply.
	expectPrefix bool
	tool         *ToolCall // the tool whose description block is being read; nil outside one
	tools        []ToolCall
	text         []byte // reusable message buffer
	dropped      []byte // the dropped line so far, in a description block
	// frame holds what may be the start of a spinner frame ("\r⠋ Dividing up the work..."),
	// from its "\r" on, until it is one or cannot be.
	frame []byte
	// rawLine is the current line of stdout as printed, before the filter (rawBytes), up to
	// maxPending bytes; agentNames are the tool names read from its banner lines, in order, until
	// the parser takes them (banner).
	rawLine    []byte
	agentNames []bannerName
}

// bannerName is a tool named by a banner line of stdout as printed: the name shown (filtered)
// and the agent's own (TrustName's form; see ToolCall.AgentName).
type bannerName struct{ shown, agent string }

// maxAgentNames bounds the banner names read ahead of the parser.
const maxAgentNames = 64

// Line modes: what the current line, once decided, is.
const (
	lineStart = iota // nothing of the line decided yet
	lineReply        // reply text up to the line break
	lineDrop         // not reply text (a banner, a description line): dropped
)

func newTextParser(raw bool, emit func(Event)) *textParser {
	return &textParser{emit: emit, raw: raw, expectPrefix: true}
}

// Banner spellings: the emoji with and without its variation selector, with two spaces or one.
var bannerPrefixes = []string{"🛠️  Using tool:", "🛠  Using tool:", "🛠️ Using tool:", "🛠 Using tool:"}

// replyPrefix starts each response (green or purple "> " before colours are stripped).
const replyPrefix = "> "

// spinnerLine is the one thing q writes to stdout that is neither reply nor tool: its spinner on a
// stream timeout. It is drawn as frames, each "\r", a glyph, a space and this text, with no line
// break, until the retried response prints its "> " on the same line; a line that is only the
// text is dropped too.
const spinnerLine = "Dividing up the work..."

// Write feeds the next piece of stripped stdout.
func (p *textParser) Write(b []byte) { p.write(b, b) }

// write feeds the next piece of stdout, as printed and ANSI-stripped; only a raw parser uses the
// printed text (as its message).
func (p *textParser) write(printed, b []byte) {
	if p.raw && len(printed) > 0 {
		p.emit(Event{Type: EventMessage, Text: string(printed)})
	}
	p.text = p.text[:0]
	p.unspin(b)
	p.flushText()
}

// rawBytes reads the next piece of stdout as printed, before the filter, for the banners' tool
// names as the agent has them: the filter keeps what a person may see, and a name that carried
// an escape sequence or a control character shows without it, which is not the name the agent
// trusts. It is called before write gives the parser the same piece filtered, so a banner's
// agent name is known when the parser reaches the banner.
func (p *textParser) rawBytes(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		piece := b
		if i >= 0 {
			piece = b[:i]
		}
		if room := maxPending - len(p.rawLine); room > 0 {
			p.rawLine = append(p.rawLine, piece[:min(len(piece), room)]...)
		}
		if i < 0 {
			return
		}
		p.rawEnd()
		b = b[i+1:]
	}
}

// rawEnd ends a line of stdout as printed: a banner line gives the tool's name as the agent
// printed it, without the colours it painted the line with.
func (p *textParser) rawEnd() {
	line := string(p.rawLine)
	p.rawLine = p.rawLine[:0]
	shown := termtext.StripString(line)
	if !hasBanner([]byte(strings.TrimLeft(shown, " "))) {
		return
	}
	t, _ := ParseBanner(shown)
	n := bannerName{shown: t.TrustName()}
	painted := unpaint(line)
	if a, ok := ParseBanner(painted); ok {
		n.agent = a.TrustName()
	} else {
		n.agent = painted // something around the banner: not a name to trust
	}
	if len(p.agentNames) == maxAgentNames {
		p.agentNames = p.agentNames[1:]
	}
	p.agentNames = append(p.agentNames, n)
}

// agentName is the name the agent printed for the banner tool t, when it differs from the name
// shown; "" when they are the same or the banner's line was not read as printed.
func (p *textParser) agentName(t ToolCall) string {
	for len(p.agentNames) > 0 {
		n := p.agentNames[0]
		p.agentNames = p.agentNames[1:]
		if n.shown == t.TrustName() {
			if n.agent != n.shown {
				return n.agent
			}
			return ""
		}
	}
	return ""
}

// unpaint removes the colours (SGR sequences, ESC [ … m) the agent paints its lines with, and
// leaves every other sequence where it is: those are not the agent's paint but part of the text.
func unpaint(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] == 'm' {
			s = s[j+1:] // a colour: dropped
			continue
		}
		b.WriteString(s[i:j])
		s = s[j:]
	}
}

// unspin takes the spinner's frames out of b and feeds the rest to the line parser, in order. A
// frame may be split across writes: its start is held until it is whole or cannot be one.
func (p *textParser) unspin(b []byte) {
	for len(b) > 0 {
		if len(p.frame) == 0 {
			i := bytes.IndexByte(b, '\r')
			if i < 0 {
				p.lines(b)
				return
			}
			p.lines(b[:i])
			b = b[i:]
		}
		// p.frame (if any) and b start with '\r': take bytes until the frame is decided.
		for len(b) > 0 {
			p.frame = append(p.frame, b[0])
			b = b[1:]
			switch frameState(p.frame) {
			case frameWhole:
				p.frame = p.frame[:0]
				p.spinner()
			case framePartial:
				continue
			default:
				// Not a frame: it is text. A frame fails at the first byte that does not fit,
				// and no '\r' fits after the first, so only that last byte can start another.
				last := p.frame[len(p.frame)-1]
				if last == '\r' {
					p.lines(p.frame[:len(p.frame)-1])
					p.frame = append(p.frame[:0], '\r')
					continue
				}
				p.lines(p.frame)
				p.frame = p.frame[:0]
			}
			break
		}
	}
}

const (
	framePartial = iota
	frameWhole
	frameNot
)

// frameState says whether f ("\r" and what follows) is a whole spinner frame, the start of one,
// or not one: "\r", one glyph that is not a space, a space, spinnerLine.
func frameState(f []byte) int {
	rest := f[1:]
	if len(rest) == 0 {
		return framePartial
	}
	if !utf8.FullRune(rest) {
		return framePartial
	}
	r, size := utf8.DecodeRune(rest)
	if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) {
		return frameNot
	}
	want := " " + spinnerLine
	got := rest[size:]
	if !isPrefixEither(got, want) {
		return frameNot
	}
	if len(got) < len(want) {
		return framePartial
	}
	return frameWhole
}

// spinner drops one spinner frame. It ends the line it interrupted (the reply's partial line
// stays, followed by a line break), and the retried response that follows starts with its own
// "> ", which is not reply text.
func (p *textParser) spinner() {
	switch {
	case len(p.pending) > 0:
		p.pending = append(p.pending, '\n')
		p.decide(true)
	case p.mode == lineReply:
		p.text = append(p.text, '\n')
		p.mode = lineStart
	case p.mode == lineDrop:
		p.endDropped()
	}
	p.expectPrefix = true
}

// lines feeds stdout without spinner frames to the line parser. A carriage return left once the
// frames are out is dropped, as termtext.Stripper drops it elsewhere: the reader keeps them only
// for unspin (KeepCR), and a lone one would let later text overwrite what was shown.
func (p *textParser) lines(b []byte) {
	if bytes.IndexByte(b, '\r') >= 0 {
		b = bytes.ReplaceAll(b, []byte{'\r'}, nil)
	}
	for len(b) > 0 {
		switch p.mode {
		case lineReply:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				p.text = append(p.text, b...)
				b = nil
				break
			}
			p.text = append(p.text, b[:i+1]...)
			b = b[i+1:]
			p.mode = lineStart
		case lineDrop:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				p.keepDropped(b)
				b = nil
				break
			}
			p.keepDropped(b[:i])
			b = b[i+1:]
			p.endDropped()
		default:
			i := bytes.IndexByte(b, '\n')
			var piece []byte
			if i < 0 {
				piece, b = b, nil
			} else {
				piece, b = b[:i+1], b[i+1:]
			}
			p.pending = append(p.pending, piece...)
			p.decide(i >= 0)
		}
	}
}

// decide settles what the pending start of a line is, once it can: complete says the line break
// has arrived.
func (p *textParser) decide(complete bool) {
	line := p.pending
	body := bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimLeft(body, " ")
	if !complete && len(line) < maxPending && (len(bytes.TrimSpace(body)) == 0 || couldBeSpecial(trimmed, p.expectPrefix || p.tool != nil)) {
		return // wait for more of the line
	}
	p.pending = p.pending[:0]
	switch {
	case hasBanner(trimmed):
		p.banner(string(trimmed))
		p.mode = lineDrop
	case p.expectPrefix && bytes.HasPrefix(body, []byte(replyPrefix)):
		p.endTool(true)
		p.expectPrefix = false
		p.text = append(p.text, line[len(replyPrefix):]...)
		p.mode = lineReply
	case p.tool != nil:
		p.keepDropped(body)
		p.mode = lineDrop
	case string(bytes.TrimSpace(body)) == spinnerLine:
		p.mode = lineDrop
	case p.expectPrefix && len(bytes.TrimSpace(line)) == 0:
		p.mode = lineDrop // blank lines before a response are not part of it
	case p.expectPrefix && isLogLine(body):
		// --verbose: q's own log lines go to stdout too. They stay in (the caller asked for them),
		// and the response's prefix is still to come.
		p.text = append(p.text, line...)
		p.mode = lineReply
	default:
		// Reply text; without the prefix (an agent that prints none) the response has started all
		// the same.
		p.expectPrefix = false
		p.text = append(p.text, line...)
		p.mode = lineReply
	}
	if complete {
		p.endDropped()
	}
}

// maxPending bounds how much of a line start is held back undecided: past it the line is decided
// as it stands (memory stays flat whatever the agent prints, and the text flows on).
const maxPending = 4096

// maxDropped bounds how much of a dropped line is read for markers.
const maxDropped = 4096

func (p *textParser) keepDropped(b []byte) {
	if p.tool != nil && len(p.dropped) < maxDropped {
		p.dropped = append(p.dropped, b[:min(len(b), maxDropped-len(p.dropped))]...)
	}
}

// endDropped ends the current line: a dropped line of a description block is read for how the
// tool call ended.
func (p *textParser) endDropped() {
	if p.mode == lineDrop {
		p.blockLine(p.dropped)
	}
	p.dropped = p.dropped[:0]
	p.mode = lineStart
}

// couldBeSpecial reports whether an incomplete line start may still turn out to be a banner, a
// response prefix or the spinner.
func couldBeSpecial(start []byte, prefixExpected bool) bool {
	if len(start) == 0 {
		return true
	}
	for _, b := range bannerPrefixes {
		if isPrefixEither(start, b) {
			return true
		}
	}
	if prefixExpected && len(start) < len(replyPrefix) && isPrefixEither(start, replyPrefix) {
		return true // a longer start with the prefix is decided: the prefix, then reply text
	}
	if prefixExpected && start[0] >= '0' && start[0] <= '9' {
		return true // maybe a --verbose log line (it starts with a time): decided at its line break
	}
	return isPrefixEither(start, spinnerLine)
}

// isPrefixEither reports whether a is a prefix of b or b of a.
func isPrefixEither(a []byte, b string) bool {
	n := min(len(a), len(b))
	return string(a[:n]) == b[:n]
}

// isLogLine reports whether line is one of the agent's --verbose log lines on stdout, which start
// with an RFC 3339 time and a level ("2026-01-02T03:04:05.678Z  INFO chat_cli::...").
func isLogLine(line []byte) bool {
	if len(line) < 20 || line[4] != '-' || line[7] != '-' || line[10] != 'T' {
		return false
	}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9} {
		if line[i] < '0' || line[i] > '9' {
			return false
		}
	}
	rest := line[19:]
	for _, level := range []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR"} {
		if i := bytes.Index(rest, []byte(level)); i >= 0 && i < 16 {
			return true
		}
	}
	return false
}

func hasBanner(line []byte) bool {
	for _, b := range bannerPrefixes {
		if bytes.HasPrefix(line, []byte(b)) {
			return true
		}
	}
	return false
}

// ParseBanner reads a tool banner line ("🛠️  Using tool: NAME[ from mcp server S][ (trusted)]",
// ANSI-stripped, either order of the two suffixes). ok is false when line is not a banner.
func ParseBanner(line string) (t ToolCall, ok bool) {
	line = strings.TrimSpace(line)
	for _, b := range bannerPrefixes {
		if rest, found := strings.CutPrefix(line, b); found {
			line, ok = rest, true
			break
		}
	}
	if !ok {
		return ToolCall{}, false
	}
	line = strings.TrimSpace(line)
	if rest, found := strings.CutSuffix(line, "(trusted)"); found {
		t.Trusted, line = true, strings.TrimSpace(rest)
	}
	if name, server, found := strings.Cut(line, " from mcp server "); found {
		line = strings.TrimSpace(name)
		if rest, found := strings.CutSuffix(line, "(trusted)"); found {
			t.Trusted, line = true, rest
		}
		server = strings.TrimSpace(server)
		if rest, found := strings.CutSuffix(server, "(trusted)"); found {
			t.Trusted, server = true, strings.TrimSpace(rest)
		}
		t.Server = server
	}
	t.Name = strings.TrimSpace(line)
	return t, true
}

// toolKinds maps the agents' built-in tool names to ACP tool kinds.
var toolKinds = map[string]string{
	"fs_read": "read", "read": "read", "fs_write": "edit", "write": "edit",
	"execute_bash": "execute", "execute_cmd": "execute", "shell": "execute",
	"grep": "search", "glob": "search", "code": "search", "web_search": "fetch", "web_fetch": "fetch",
	"thinking": "think",
}

func (p *textParser) banner(line string) {
	p.endTool(true)
	t, _ := ParseBanner(line)
	t.ID = strconv.Itoa(len(p.tools) + 1)
	t.AgentName = p.agentName(t)
	t.Title = t.Name
	if t.Server != "" {
		t.Title = t.Name + " (" + t.Server + ")"
	}
	t.Kind = toolKinds[t.Name]
	if t.Kind == "" {
		t.Kind = "other"
	}
	t.Status = ToolPending
	if t.Trusted {
		t.Status = ToolInProgress
	}
	p.tools = append(p.tools, t)
	p.tool = &p.tools[len(p.tools)-1]
	p.expectPrefix = true
	p.flushText()
	p.emit(Event{Type: EventToolCall, Tool: new(*p.tool)})
}

// Markers in a description block (kiro's denial text; q's " ● Execution failed after 0.1s:").
const (
	deniedMarker = "rules on the denied list"
	failedMarker = "Execution failed"
)

// blockLine reads a line of a tool's description block for how the call ended.
func (p *textParser) blockLine(line []byte) {
	if p.tool == nil {
		return
	}
	switch {
	case bytes.Contains(line, []byte(deniedMarker)):
		p.tool.Denied = true
	case bytes.Contains(line, []byte(failedMarker)):
		p.tool.Status = ToolFailed
	}
}

// endTool ends the current tool call, if any. carriedOn says the agent went on after it (another
// response or tool): an untrusted tool it went on without was refused, not run.
func (p *textParser) endTool(carriedOn bool) {
	t := p.tool
	if t == nil {
		return
	}
	p.tool = nil
	switch {
	case t.Denied || (!t.Trusted && carriedOn):
		t.Denied, t.Status = true, ToolFailed
	case t.Status == ToolFailed:
	case t.Trusted && carriedOn:
		t.Status = ToolCompleted
	default:
		return // the run's end decides (close)
	}
	p.flushText()
	p.emit(Event{Type: EventToolCallUpdate, Tool: &ToolCall{ID: t.ID, Status: t.Status, Denied: t.Denied}})
}

// close ends the stream once the agent has exited: ok says it exited 0.
func (p *textParser) close(ok bool) {
	if len(p.rawLine) > 0 {
		p.rawEnd() // the last line, without a line break
	}
	if len(p.frame) > 0 { // the start of a frame that never finished: text
		p.lines(p.frame)
		p.frame = p.frame[:0]
		p.flushText()
	}
	if len(p.pending) > 0 {
		p.decide(true)
		p.flushText()
	}
	p.endDropped()
	t := p.tool
	if t == nil {
		return
	}
	p.tool = nil
	switch {
	case t.Status == ToolFailed || t.Denied:
	case !t.Trusted && ok:
		t.Denied, t.Status = true, ToolFailed // kiro: refused, and the model finished without it
	case t.Trusted && ok:
		t.Status = ToolCompleted
	default:
		t.Status = ToolFailed // q stopped at it (approval), or the run failed while it ran
	}
	p.emit(Event{Type: EventToolCallUpdate, Tool: &ToolCall{ID: t.ID, Status: t.Status, Denied: t.Denied}})
}

func (p *textParser) flushText() {
	if len(p.text) == 0 || p.raw {
		p.text = p.text[:0]
		return
	}
	p.emit(Event{Type: EventMessage, Text: string(p.text)})
	p.text = p.text[:0]
}
