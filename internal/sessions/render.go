package sessions

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/sessionrec"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// WriteText writes e as `sessions show` prints it for a person. Everything that came from outside
// (the agent's replies, prompts, titles, folders) goes through termtext, so it cannot drive the
// terminal; folderGone marks a session whose folder no longer exists.
func WriteText(w io.Writer, e Export, folderGone bool) error {
	b := bufio.NewWriter(w)
	line := termtext.VisibleLine
	s := e.Session
	fmt.Fprintf(b, "Session  %s\n", line(s.ID)) // a session stored before ids were checked may hold any text
	if s.Title != "" {
		fmt.Fprintf(b, "Title    %s\n", line(s.Title))
	}
	folder := line(s.Cwd)
	if folderGone {
		folder += "  (folder no longer exists)"
	}
	fmt.Fprintf(b, "Folder   %s\n", folder)
	fmt.Fprintf(b, "Origin   %s   Backend %s   Model %s\n", orNone(line(s.Origin)), orNone(line(s.Backend)), orNone(line(s.Model)))
	if s.Mode != "" {
		fmt.Fprintf(b, "Mode     %s\n", line(s.Mode))
	}
	if len(s.TrustedTools) > 0 {
		fmt.Fprintf(b, "Trusted  %s\n", line(strings.Join(s.TrustedTools, ", ")))
	}
	fmt.Fprintf(b, "Updated  %s   Turns %d\n", stamp(s.UpdatedAt), s.Turns)
	for _, m := range e.Transcript {
		who := "User"
		if m.Role == RoleAgent {
			who = "Agent"
		}
		fmt.Fprintf(b, "\n── %s · %s\n", who, stamp(m.At))
		if text := strings.TrimRight(m.Text, "\n"); text != "" {
			b.WriteString(termtext.Visible(text))
			b.WriteByte('\n')
		}
		for _, t := range m.Tools {
			fmt.Fprintf(b, "   tool %s\n", line(toolLine(t)))
		}
		if m.Usage != nil {
			fmt.Fprintf(b, "   usage %s\n", usageLine(*m.Usage))
		}
		if note := endingNote(m); note != "" {
			fmt.Fprintf(b, "   %s\n", note)
		}
	}
	return b.Flush()
}

// endingNote is sessionrec.EndingNote for a person: an imported file's ending is checked, the
// agent's own one normalised (sessionrec.Ending), but the tools named in it are anyone's text.
func endingNote(m ExportedMessage) string {
	return termtext.VisibleLine(sessionrec.EndingNote(m.Ended, m.Truncated, m.Tools))
}

// WriteMarkdown writes e as a Markdown document (`sessions export --format md`), for people to
// read; it is not read back (import takes the JSON export). Control characters are escaped as in
// WriteText: the file may well be printed on a terminal.
func WriteMarkdown(w io.Writer, e Export, folderGone bool) error {
	b := bufio.NewWriter(w)
	line := termtext.VisibleLine
	s := e.Session
	title := s.Title
	if title == "" {
		title = "Session " + s.ID
	}
	fmt.Fprintf(b, "# %s\n\n", line(title))
	fmt.Fprintf(b, "- Session: `%s`\n", line(s.ID))
	folder := "`" + line(s.Cwd) + "`"
	if folderGone {
		folder += " (no longer exists)"
	}
	fmt.Fprintf(b, "- Folder: %s\n", folder)
	fmt.Fprintf(b, "- Origin: %s; backend: %s; model: %s\n", orNone(line(s.Origin)), orNone(line(s.Backend)), orNone(line(s.Model)))
	if s.Mode != "" {
		fmt.Fprintf(b, "- Mode: %s\n", line(s.Mode))
	}
	if len(s.TrustedTools) > 0 {
		fmt.Fprintf(b, "- Trusted tools: %s\n", line(strings.Join(s.TrustedTools, ", ")))
	}
	fmt.Fprintf(b, "- Created: %s; updated: %s; turns: %d\n", stamp(s.CreatedAt), stamp(s.UpdatedAt), s.Turns)
	for _, m := range e.Transcript {
		who := "User"
		if m.Role == RoleAgent {
			who = "Agent"
		}
		fmt.Fprintf(b, "\n## %s (%s)\n\n", who, stamp(m.At))
		if text := strings.TrimRight(m.Text, "\n"); text != "" {
			b.WriteString(termtext.Visible(text))
			b.WriteString("\n")
		}
		note := endingNote(m)
		if len(m.Tools) > 0 || m.Usage != nil || note != "" {
			b.WriteString("\n")
		}
		for _, t := range m.Tools {
			fmt.Fprintf(b, "- Tool: %s\n", line(toolLine(t)))
		}
		if m.Usage != nil {
			fmt.Fprintf(b, "- Usage: %s\n", usageLine(*m.Usage))
		}
		if note != "" {
			fmt.Fprintf(b, "- Ended: %s\n", note)
		}
	}
	return b.Flush()
}

func toolLine(t ToolCall) string {
	name := t.Label()
	switch {
	case t.Denied:
		return name + ": denied"
	case t.Status != "":
		return name + ": " + t.Status
	}
	return name
}

func usageLine(u Usage) string {
	var parts []string
	if u.InputTokens > 0 || u.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens in, %d out", u.InputTokens, u.OutputTokens))
	}
	if u.Credits > 0 {
		parts = append(parts, fmt.Sprintf("%.2f credits", u.Credits))
	}
	if u.ContextPercent > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% of the context window", u.ContextPercent))
	}
	if u.TurnDurationMs > 0 {
		parts = append(parts, (time.Duration(u.TurnDurationMs) * time.Millisecond).String())
	}
	if len(parts) == 0 {
		return "not reported"
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}
