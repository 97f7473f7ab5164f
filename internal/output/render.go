package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"
)

// JSON writes v as indented JSON followed by a newline. HTML characters are not escaped: the output
// is for programs and people, not for a web page. C1 and bidirectional controls are
// (TerminalSafeJSON): the JSON may be read on a terminal.
func JSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(TerminalSafeJSON(buf.Bytes()))
	return err
}

// Table prints rows under a header: an aligned table when tty is set, as wide as the terminal at
// most (long cells wrap), otherwise tab-separated lines without a header, which scripts cut and awk.
func Table(w io.Writer, tty bool, header []string, rows [][]string) error {
	if !tty {
		l := NewLines(w)
		for _, r := range rows {
			l.Row(r...)
		}
		return l.Flush()
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
			Symbols: tw.NewSymbols(tw.StyleNone),
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.On),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	if width := TerminalWidth(w); width > 0 {
		t.Options(tablewriter.WithMaxWidth(width), tablewriter.WithRowAutoWrap(tw.WrapNormal))
	}
	t.Header(toAny(header)...)
	for _, r := range rows {
		if err := t.Append(toAny(r)...); err != nil {
			return err
		}
	}
	return t.Render()
}

// Lines writes a table's rows as Table does without a terminal (tab-separated cells, a tab or
// newline inside a cell as a space, no header), one row at a time, so a long list need not hold
// every row first. Buffered: one write per line made a list of 10,000 rows cost 10,000 system
// calls. Flush writes what is left and returns the first error.
type Lines struct {
	b     *bufio.Writer
	clean *strings.Replacer
}

// NewLines returns a Lines writing to w.
func NewLines(w io.Writer) *Lines {
	return &Lines{b: bufio.NewWriter(w), clean: strings.NewReplacer("\t", " ", "\n", " ")}
}

// Row writes one row.
func (l *Lines) Row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			l.b.WriteByte('\t')
		}
		l.b.WriteString(l.clean.Replace(c))
	}
	l.b.WriteByte('\n')
}

// Flush writes what is buffered.
func (l *Lines) Flush() error { return l.b.Flush() }

// TerminalWidth is the number of columns of the terminal w writes to, or else $COLUMNS, or 0 when
// neither is known.
func TerminalWidth(w io.Writer) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
