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

// blockFrameBytes is what the block adds around its files: the begin line, the end line and the
// blank line before the prompt.
const blockFrameBytes = int64(len(BlockBegin) + 1 + len(BlockEnd) + 2)

// blockFrameTokens is the frame's share of the budget, paid once when any file is sent.
var blockFrameTokens = EstimateTokens(blockFrameBytes)

// fileBytes is what a file of size bytes at path adds to the block as Prompt writes it: the blank
// line before it, its header (fileHeader, the one rule for it), its content and the line break
// after content that lacks one. It counts the blank line and the line break whether or not the file
// needs them, so it may say two bytes more than Prompt writes, never less: the budget is a bound.
func fileBytes(path string, size int64) int64 {
	return 1 + int64(len(fileHeader(path))) + size + 1
}

// blockTokens is the estimate for a block that holds files: their tokens and the frame's, or 0
// for no file (no block is sent). Each file's estimate is rounded up on its own, so the block's
// own estimate (EstimateTokens of its length) is never more than this.
func blockTokens(files []File) int64 {
	if len(files) == 0 {
		return 0
	}
	total := blockFrameTokens
	for _, f := range files {
		total += f.Tokens
	}
	return total
}

// NeededTokens is the context.max_tokens that would send every file the budget dropped too.
func (r *Report) NeededTokens() int64 {
	return blockTokens(append(append([]File(nil), r.Files...), r.Dropped...))
}

// applyBudget splits files (in path order) into those kept and those dropped so that the block
// of the kept files (blockTokens: every file's header and content, and the frame) is at most
// maxTokens, dropping the costliest first. maxTokens <= 0 means no limit.
func applyBudget(files []File, maxTokens int64) (kept, dropped []File) {
	total := blockTokens(files)
	if maxTokens <= 0 || total <= maxTokens {
		return files, nil
	}
	byCost := append([]File(nil), files...)
	sort.SliceStable(byCost, func(i, j int) bool {
		if byCost[i].Tokens != byCost[j].Tokens {
			return byCost[i].Tokens > byCost[j].Tokens
		}
		if byCost[i].Bytes != byCost[j].Bytes {
			return byCost[i].Bytes > byCost[j].Bytes
		}
		return byCost[i].Path < byCost[j].Path
	})
	drop := map[string]bool{}
	left := len(files)
	for _, f := range byCost {
		if total <= maxTokens {
			break
		}
		drop[f.Path] = true
		dropped = append(dropped, f)
		total -= f.Tokens
		if left--; left == 0 {
			total = 0 // no file left, no frame
		}
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
