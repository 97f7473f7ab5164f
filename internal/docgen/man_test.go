package docgen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/cmd"
	"github.com/qkit-cli/qkit/internal/app"
)

// generated builds the command tree, writes the docs for it under a temporary folder and returns
// both.
func generated(t *testing.T) (*cobra.Command, string) {
	t.Helper()
	streams, _, _, _ := app.Test()
	root := cmd.NewRoot(app.New(streams, app.VersionInfo{}))
	dir := t.TempDir()
	if err := Generate(root, dir, time.Date(2026, time.March, 14, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return root, filepath.Join(dir, "man")
}

// pagesOf calls fn for cmd and every command that has a page.
func pagesOf(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			pagesOf(sub, fn)
		}
	}
}

// manText reads a man page back as text, section by section: requests become paragraph breaks,
// escapes become the characters they stand for, fonts are dropped.
func manText(t *testing.T, page []byte) map[string]string {
	t.Helper()
	unicode := regexp.MustCompile(`\\\[u([0-9A-F]{4,6})\]`)
	sections := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(line, ".") {
			if name, ok := strings.CutPrefix(line, ".SH "); ok {
				section = name
			} else if arg, ok := strings.CutPrefix(line, ".IP "); ok {
				sections[section] += "\n" + strings.TrimSuffix(arg, " 2")
			}
			sections[section] += "\n"
			continue
		}
		line = strings.TrimPrefix(line, `\&`)
		line = strings.NewReplacer(`\fB`, "", `\fI`, "", `\fR`, "", `\fP`, "", `\-`, "-", `\e`, "\x00").Replace(line)
		line = unicode.ReplaceAllStringFunc(line, func(m string) string {
			n, err := strconv.ParseUint(unicode.FindStringSubmatch(m)[1], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return string(rune(n))
		})
		if strings.Contains(line, `\`) {
			t.Errorf("an escape manText does not know in %q", line)
		}
		line = strings.ReplaceAll(line, "\x00", `\`)
		sections[section] += line + "\n"
	}
	return sections
}

var spaces = regexp.MustCompile(`\s+`)

func squeeze(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// helpFlags reads the flag lines of --help: each flag ("-f, --force", "--config FILE") and its
// usage, continuation lines included.
func helpFlags(help string) map[string]string {
	flags := map[string]string{}
	in, last := false, ""
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "Flags:" || line == "Global Flags:":
			in = true
		case !in:
		case strings.TrimSpace(line) == "":
			in = false
		case strings.HasPrefix(strings.TrimLeft(line, " "), "-"):
			tag, usage, _ := strings.Cut(strings.TrimLeft(line, " "), "   ")
			last = tag
			flags[tag] = strings.TrimSpace(usage)
		default:
			flags[last] += " " + strings.TrimSpace(line)
		}
	}
	return flags
}

var placeholder = regexp.MustCompile(`<[^<>\s]+>`)

// TestManPagesSayWhatHelpSays: each man page's synopsis is the command's usage line, each flag line
// of --help (the flag, its value's name and its usage) is in the page, the description and the
// examples are there word for word, and every <placeholder> of --help survives.
func TestManPagesSayWhatHelpSays(t *testing.T) {
	root, dir := generated(t)
	var help bytes.Buffer
	root.SetOut(&help)
	pages := 0
	pagesOf(root, func(c *cobra.Command) {
		pages++
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		page := manText(t, data)
		help.Reset()
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		if got := squeeze(page["SYNOPSIS"]); got != c.UseLine() {
			t.Errorf("%s: SYNOPSIS %q, --help's usage %q", name, got, c.UseLine())
		}
		all := squeeze(strings.Join([]string{page["NAME"], page["SYNOPSIS"], page["DESCRIPTION"], page["OPTIONS"],
			page["OPTIONS INHERITED FROM PARENT COMMANDS"], page["EXAMPLES"]}, "\n"))
		flags := helpFlags(help.String())
		if c.HasAvailableFlags() && len(flags) == 0 {
			t.Errorf("%s: no flags read from --help:\n%s", name, help.String())
		}
		for tag, usage := range flags {
			if want := squeeze(tag + " " + usage); !strings.Contains(all, want) {
				t.Errorf("%s: the flag line %q of --help is not in the page", name, want)
			}
		}
		long := c.Long
		if long == "" {
			long = c.Short
		}
		if !strings.Contains(squeeze(page["DESCRIPTION"]), squeeze(long)) {
			t.Errorf("%s: DESCRIPTION is not --help's text:\n%s\nwant\n%s", name, squeeze(page["DESCRIPTION"]), squeeze(long))
		}
		if c.Example != "" && squeeze(page["EXAMPLES"]) != squeeze(c.Example) {
			t.Errorf("%s: EXAMPLES %q, --help's %q", name, squeeze(page["EXAMPLES"]), squeeze(c.Example))
		}
		for _, p := range placeholder.FindAllString(help.String(), -1) {
			if !strings.Contains(all, p) {
				t.Errorf("%s: --help's %s is not in the page", name, p)
			}
		}
	})
	if pages < 30 {
		t.Errorf("checked %d pages; the tree has more", pages)
	}
	// The three losses that were found by a reader.
	for page, want := range map[string]string{
		"qkit-context-add.1": "<path>...",
		"qkit-ask.1":         "qkit help <topic>",
		"qkit.1":             "<config>/config.yaml",
	} {
		data, _ := os.ReadFile(filepath.Join(dir, page))
		if text := manText(t, data); !strings.Contains(squeeze(strings.Join([]string{text["SYNOPSIS"], text["DESCRIPTION"], text["OPTIONS"]}, " ")), want) {
			t.Errorf("%s lost %q", page, want)
		}
	}
}

// TestManPagesPassGroff: groff formats every page without a warning (-ww turns all of them on).
func TestManPagesPassGroff(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed (apt-get install groff), so the pages' roff is not checked here")
	}
	_, dir := generated(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var stderr bytes.Buffer
		c := exec.Command(groff, "-man", "-ww", "-Tutf8", filepath.Join(dir, e.Name()))
		c.Stderr = &stderr
		if err := c.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("groff %s: %v\n%s", e.Name(), err, stderr.String())
		}
	}
}
