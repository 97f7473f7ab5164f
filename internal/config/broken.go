package config

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// FileError is a config file whose content does not load: not text, or not YAML that qkit can
// read. Line is the line the problem is on, when it is known (1-based).
type FileError struct {
	File string
	Line int
	Text string // the line's text, when Line is known
	Err  error
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("config file %s: %v", e.File, e.Err)
	}
	if t := strings.TrimSpace(e.Text); t != "" && len(t) <= 60 {
		return fmt.Sprintf("config file %s: line %d (%q): %v", e.File, e.Line, t, e.Err)
	}
	return fmt.Sprintf("config file %s: line %d: %v", e.File, e.Line, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// yamlLine is the "line N: " that YAML's messages start with (compiled when first needed, not in
// every start's init).
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (line \d+: )?`) })

// maxLinesSearched bounds the search for the line a syntax error is on (see contentError).
const maxLinesSearched = 2000

// contentError explains why data, the content of file, did not load (err is the loader's error).
// YAML's parser often names the line where the construct around the problem began (the mapping
// an ill-indented key was meant for) rather than the line at fault, so the line is found again
// here: it is the one after the longest run of leading lines that still parses.
func contentError(file string, data []byte, err error) *FileError {
	_, text, terr := configText(data)
	if terr != nil {
		return &FileError{File: file, Err: terr} // says more than YAML's own message
	}
	msg := unwrapYAML(err)
	fe := &FileError{File: file, Err: errors.New(msg)}
	if _, derr := decodeDocuments(text); derr == nil {
		return fe // the YAML is well formed; the problem is its shape, and the message says so
	}
	lines := strings.SplitAfter(string(text), "\n")
	if len(lines) > maxLinesSearched {
		return fe
	}
	good := 0
	for n := len(lines) - 1; n > 0; n-- {
		if _, perr := decodeDocuments([]byte(strings.Join(lines[:n], ""))); perr == nil {
			good = n
			break
		}
	}
	fe.Line = good + 1
	fe.Text = strings.TrimRight(lines[good], "\r\n")
	fe.Err = errors.New(yamlLine().ReplaceAllString(msg, ""))
	return fe
}

// ResetBroken replaces a config file whose content does not load (see Config.Broken) with an
// empty one, after keeping its content beside it as <file>.broken. It returns that copy's path.
// A file that loads again by now is reset as Reset does, and the path is empty.
func (c *Config) ResetBroken(ctx context.Context) (string, error) {
	kept := ""
	err := filestore.UpdateContext(ctx, c.File, 0o600, 0o700, func(old []byte) ([]byte, error) {
		_, text, terr := configText(old)
		if terr == nil {
			if docs, derr := decodeDocuments(text); derr == nil && checkLoads(old, len(docs)) == nil {
				return nil, errStillLoads
			}
		}
		kept = c.File + ".broken"
		if err := filestore.ReplaceAtomic(kept, old, 0o600, 0o700); err != nil {
			return nil, fmt.Errorf("config file %s: cannot keep a copy as %s: %w (left unchanged)", c.File, kept, err)
		}
		return []byte{}, nil
	})
	if errors.Is(err, errStillLoads) {
		return "", c.Reset(ctx)
	}
	return kept, err
}

var errStillLoads = errors.New("the config file loads")
