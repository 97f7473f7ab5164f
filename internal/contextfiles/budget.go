package contextfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// EstimateTokens is qkit's token estimate for n bytes of text: bytes/4, rounded up.
func EstimateTokens(n int64) int64 { return (n + 3) / 4 }

// errNotText marks a file that holds a NUL byte or is not valid UTF-8.
var errNotText = errors.New("binary or not UTF-8 text")

// checkText reads the file at path through buf and returns its size, or errNotText, or the read
// error. Memory stays at len(buf) whatever the file's size. When the file is larger than limit bytes
// (limit >= 0), only its first len(buf) bytes are checked and its size is taken from the file system:
// such a file cannot be sent anyway.
func checkText(path string, buf []byte, limit int64) (int64, error) {
	f, err := filestore.OpenRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	prefixOnly := false
	var statSize int64
	if fi, err := f.Stat(); err == nil && limit >= 0 && fi.Size() > limit {
		prefixOnly, statSize = true, fi.Size()
	}
	var size int64
	carry := 0
	for {
		n, err := f.Read(buf[carry:])
		size += int64(n)
		data := buf[:carry+n]
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return 0, err
		}
		if bytes.IndexByte(data[carry:], 0) >= 0 {
			return 0, errNotText
		}
		cut := len(data)
		if !eof {
			cut = incompleteTail(data)
		}
		if !utf8.Valid(data[:cut]) {
			return 0, errNotText
		}
		if prefixOnly {
			return statSize, nil
		}
		if eof {
			return size, nil
		}
		carry = copy(buf, data[cut:])
	}
}

// incompleteTail returns where a UTF-8 sequence cut off by the end of data begins (len(data) if none).
func incompleteTail(data []byte) int {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if utf8.FullRune(data[i:]) {
				return len(data)
			}
			return i
		}
	}
	return len(data)
}

// isText reports whether b may be sent: no NUL byte and valid UTF-8.
func isText(b []byte) bool { return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b) }

// applyBudget splits files (in path order) into those kept and those dropped so that the kept
// files' tokens total at most maxTokens, dropping the largest first. maxTokens <= 0 means no limit.
func applyBudget(files []File, maxTokens int64) (kept, dropped []File) {
	var total int64
	for _, f := range files {
		total += f.Tokens
	}
	if maxTokens <= 0 || total <= maxTokens {
		return files, nil
	}
	bySize := append([]File(nil), files...)
	sort.SliceStable(bySize, func(i, j int) bool {
		if bySize[i].Bytes != bySize[j].Bytes {
			return bySize[i].Bytes > bySize[j].Bytes
		}
		return bySize[i].Path < bySize[j].Path
	})
	drop := map[string]bool{}
	for _, f := range bySize {
		if total <= maxTokens {
			break
		}
		drop[f.Path] = true
		dropped = append(dropped, f)
		total -= f.Tokens
	}
	for _, f := range files {
		if !drop[f.Path] {
			kept = append(kept, f)
		}
	}
	return kept, dropped
}

// droppedWarning summarises what the budget dropped, naming the first few files.
func droppedWarning(dropped []File, maxTokens int64) string {
	const show = 10
	msg := fmt.Sprintf("context files exceed context.max_tokens (%d): dropped %s, largest first:", maxTokens, plural(int64(len(dropped)), "file", "files"))
	for i, f := range dropped {
		if i == show {
			msg += fmt.Sprintf(" (%s more)", plural(int64(len(dropped)-show), "file", "files"))
			break
		}
		sep := ","
		if i == 0 {
			sep = ""
		}
		msg += fmt.Sprintf("%s %s (~%s)", sep, f.Path, plural(f.Tokens, "token", "tokens"))
	}
	return msg + "; run qkit context show to learn more"
}

// plural is n and the noun that fits it: "1 file", "2 files".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
