package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The man pages are written here rather than by cobra/doc: cobra's generator reads a command's
// help as Markdown, so <placeholder>s vanished as HTML tags, `FILE` became bold, ** and * in globs
// turned into emphasis and the text around them was lost. qkit's help is plain text written for a
// terminal, and the pages say what --help says: the same synopsis, description, flag lines and
// examples, escaped for roff and nothing else.

// manHeader is what every page's .TH line carries besides its title.
type manHeader struct {
	section, source, manual string
	date                    time.Time
}

// genManTree writes one page for cmd and for each of its available subcommands under dir, named
// after the command path (qkit-context-add.1).
func genManTree(cmd *cobra.Command, h manHeader, dir string) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := genManTree(c, h, dir); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	writeManPage(&b, cmd, h)
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + "." + h.section
	return os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644)
}

// writeManPage writes cmd's page to b.
func writeManPage(b *bytes.Buffer, cmd *cobra.Command, h manHeader) {
	cmd.InitDefaultHelpFlag()
	dashed := strings.ReplaceAll(cmd.CommandPath(), " ", "-")
	fmt.Fprintf(b, ".TH %q %q %q %q %q\n", strings.ToUpper(dashed), h.section, h.date.Format("Jan 2006"), h.source, h.manual)
	b.WriteString(".nh\n.ad l\n")

	b.WriteString(".SH NAME\n")
	fmt.Fprintf(b, "%s \\- %s\n", roffText(dashed), roffText(cmd.Short))

	b.WriteString(".SH SYNOPSIS\n")
	fmt.Fprintf(b, ".nf\n%s\n.fi\n", roffLine(cmd.UseLine()))

	b.WriteString(".SH DESCRIPTION\n")
	long := cmd.Long
	if long == "" {
		long = cmd.Short
	}
	writeText(b, long)

	if flags := cmd.NonInheritedFlags(); flags.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		writeFlags(b, flags)
	}
	if flags := cmd.InheritedFlags(); flags.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS INHERITED FROM PARENT COMMANDS\n")
		writeFlags(b, flags)
	}
	if cmd.Example != "" {
		b.WriteString(".SH EXAMPLES\n")
		fmt.Fprintf(b, ".nf\n%s\n.fi\n", roffLines(strings.Split(strings.TrimRight(cmd.Example, "\n"), "\n")))
	}
	if !cmd.HasParent() {
		// The exit codes are a help topic (qkit help exit-codes); a man page has them as a section.
		for _, t := range cmd.Commands() {
			if t.IsAdditionalHelpTopicCommand() && t.Name() == "exit-codes" {
				b.WriteString(".SH EXIT STATUS\n")
				writeText(b, t.Long)
			}
		}
	}
	var also []string
	if cmd.HasParent() {
		also = append(also, strings.ReplaceAll(cmd.Parent().CommandPath(), " ", "-"))
	}
	children := cmd.Commands()
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, c := range children {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
			also = append(also, dashed+"-"+c.Name())
		}
	}
	if len(also) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		for i, name := range also {
			sep := ","
			if i == len(also)-1 {
				sep = ""
			}
			fmt.Fprintf(b, ".BR %s (%s)%s\n", roffText(name), h.section, sep)
		}
	}
}

// writeFlags writes each visible flag as --help shows it: the flag and its value's name as the tag,
// the usage with its default as the paragraph. The line is pflag's own, taken from a set holding
// that flag alone, so the page cannot drift from --help.
func writeFlags(b *bytes.Buffer, flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		tag, usage := FlagHelp(f)
		name, value, _ := strings.Cut(tag, " ")
		if value != "" {
			value = ` \fI` + roffText(value) + `\fR`
		}
		fmt.Fprintf(b, ".TP\n\\fB%s\\fR%s\n%s\n", roffText(name), value, roffLines(strings.Split(usage, "\n")))
	})
}

// FlagHelp returns the two halves of f's line in --help: the flag ("-f, --force", "--config FILE")
// and its usage with the default, if --help shows one.
func FlagHelp(f *pflag.Flag) (tag, usage string) {
	one := pflag.NewFlagSet("", pflag.ContinueOnError)
	one.AddFlag(f)
	line := strings.TrimRight(one.FlagUsagesWrapped(0), "\n")
	first, rest, _ := strings.Cut(line, "\n")
	first = strings.TrimLeft(first, " ")
	tag, usage, _ = strings.Cut(first, "   ")
	usage = strings.TrimLeft(usage, " ")
	if rest != "" {
		// Continuation lines of a multi-line usage are indented to the usage column.
		for _, l := range strings.Split(rest, "\n") {
			usage += "\n" + strings.TrimLeft(l, " ")
		}
	}
	return tag, usage
}

// writeText writes help text as roff. Paragraphs (split at blank lines) are filled, except a
// paragraph with indented lines (a table, commands), which keeps its lines as they are. A line
// starting with "- " starts a list item; the lines after it continue that item.
func writeText(b *bytes.Buffer, text string) {
	paras := strings.Split(strings.Trim(text, "\n"), "\n\n")
	for i, p := range paras {
		p = strings.Trim(p, "\n")
		if p == "" {
			continue
		}
		if i > 0 {
			b.WriteString(".PP\n")
		}
		lines := strings.Split(p, "\n")
		if indented(lines) {
			fmt.Fprintf(b, ".nf\n%s\n.fi\n", roffLines(lines))
			continue
		}
		inItem := false
		for _, l := range lines {
			if strings.HasPrefix(l, "- ") {
				b.WriteString(".IP \\- 2\n")
				l, inItem = strings.TrimPrefix(l, "- "), true
			}
			b.WriteString(roffLine(l) + "\n")
		}
		if inItem {
			b.WriteString(".PP\n")
		}
	}
}

// indented reports whether any line (after the first) starts with a space or tab: the paragraph
// was laid out by hand.
func indented(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			return true
		}
	}
	return false
}

// roffLines escapes each line and joins them with line breaks.
func roffLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = roffLine(l)
	}
	return strings.Join(out, "\n")
}

// roffLine escapes one line of text for roff: a leading . or ' would make it a request.
func roffLine(l string) string {
	s := roffText(l)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText escapes text for roff: backslashes, hyphens (as \-, so options and paths copy as typed),
// and every character outside ASCII as \[uXXXX] (groff reads input as Latin-1 without preconv and
// warns about the bytes of UTF-8).
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r == '\t':
			b.WriteString("        ")
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
