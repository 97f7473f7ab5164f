package agent

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The agent CLIs qkit knows by name (Version.Flavour).
const (
	FlavourQ    = "q"        // the Amazon Q Developer CLI 1.x: chat only, no acp, no --list-models
	FlavourKiro = "kiro-cli" // Kiro CLI: chat, acp and --list-models
)

// Version is what `<agent> --version` says.
type Version struct {
	// Text is the first line it printed, made Printable and cut to a sensible length.
	Text string `json:"text"`
	// Number is the version number in it ("2.21.2"), without a leading "v".
	Number string `json:"number"`
	// Flavour is FlavourKiro or FlavourQ when the text names one of them, "" for any other agent.
	Flavour string `json:"flavour"`
}

// Major is the number before the first dot of Number ("" when there is none).
func (v Version) Major() string {
	major, _, _ := strings.Cut(v.Number, ".")
	return major
}

var versionNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^0-9A-Za-z.])v?([0-9]+\.[0-9]+(?:\.[0-9]+)?(?:[-+][0-9A-Za-z.-]+)?)`)
})

// maxVersionText is how much of the version line is kept: enough for any real one.
const maxVersionText = 120

// ParseVersion reads the output of `<agent> --version`: clap prints "<name> <version>" ("q 1.19.7",
// "kiro-cli 2.21.2"). The first non-empty line is taken; ok is false when it holds no version number.
// The flavour is read from the name: a line that mentions kiro is Kiro CLI (on upgraded machines
// `q` itself runs kiro-cli and may say so), a first word q, qchat or "Amazon Q" is the Q CLI.
func ParseVersion(out string) (v Version, ok bool) {
	v.Text = firstLine(out)
	if m := versionNumber().FindStringSubmatch(v.Text); m != nil {
		v.Number = m[1]
	}
	lower := strings.ToLower(v.Text)
	first, _, _ := strings.Cut(lower, " ")
	switch {
	case strings.Contains(lower, "kiro"):
		v.Flavour = FlavourKiro
	case first == "q" || first == "qchat" || first == "q-cli" || strings.HasPrefix(lower, "amazon q"):
		v.Flavour = FlavourQ
	}
	return v, v.Number != ""
}

// versionTimeout bounds `--version`, which reads nothing but the binary.
const versionTimeout = 10 * time.Second

// ReadVersion asks the agent CLI command for its version (`<command> --version`). A missing binary
// is a *MissingCommandError; an agent that fails or prints no version number an error that quotes
// what it said. ctx bounds it too.
func ReadVersion(ctx context.Context, command string) (Version, error) {
	out, errOut, exit, err := query(ctx, command, "--version", versionTimeout, "--version")
	if err != nil {
		return Version{}, err
	}
	v, ok := ParseVersion(out)
	if exit.Code != 0 || !ok {
		said := v.Text
		if said == "" {
			said = firstLine(errOut)
		}
		if said == "" {
			said = "nothing"
		}
		return v, fmt.Errorf("%s --version (exit status %d) printed no version: %q", commandName(command), exit.Code, said)
	}
	return v, nil
}

// firstLine is the first non-empty line of s, made Printable, trimmed and cut to maxVersionText
// bytes (at a rune boundary, with an ellipsis).
func firstLine(s string) string {
	var line string
	for _, l := range strings.Split(Printable(s), "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	if len(line) <= maxVersionText {
		return line
	}
	cut := maxVersionText
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "…"
}
