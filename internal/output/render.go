package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"

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

// TSV prints rows as tab-separated lines without a header, which scripts cut and awk: what a
// table is when stdout is no terminal (tabs and line breaks inside a cell become spaces). The
// aligned table for a terminal is internal/output/table's.
func TSV(w io.Writer, rows [][]string) error {
	l := NewLines(w)
	for _, r := range rows {
		l.Row(r...)
	}
	return l.Flush()
}

// Lines writes a table's rows as TSV does (tab-separated cells, a tab or
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
