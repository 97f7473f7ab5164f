// Package table renders aligned tables for a terminal with tablewriter. It is its own package,
// apart from internal/output, because tablewriter's package init (its display-width tables) costs
// every process that links it: the light qkit binary (build tag qkit_lite) links none of it and
// hands a table on a terminal to qkit-full (cmd/lite.go).
package table

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/qkit-cli/qkit/internal/output"
)

// Render prints rows under a header as an aligned table, as wide as the terminal w writes to at
// most (long cells wrap; output.TerminalWidth).
func Render(w io.Writer, header []string, rows [][]string) error {
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
	if width := output.TerminalWidth(w); width > 0 {
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

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
