// Package streamjsontest checks lines of `qkit ask --output-format stream-json` against the
// committed schema. Only tests import it, so the validator stays out of the qkit binary.
package streamjsontest

import (
	"bufio"
	"bytes"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/qkit-cli/qkit/internal/streamjson"
)

var (
	once   sync.Once
	schema *jsonschema.Schema
	serr   error
)

func compiled() (*jsonschema.Schema, error) {
	once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(streamjson.Schema))
		if err != nil {
			serr = fmt.Errorf("the stream-json schema does not parse: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		const url = "stream-json.schema.json"
		if err := c.AddResource(url, doc); err != nil {
			serr = err
			return
		}
		schema, serr = c.Compile(url)
	})
	return schema, serr
}

// Validate checks one line.
func Validate(line []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("not JSON: %w: %s", err, line)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s\n%v", line, err)
	}
	return nil
}

// ValidateStream checks every line of a stream, and that the last one (and only the last) is the
// result. It returns how many lines it checked.
func ValidateStream(data []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n, results := 0, 0
	last := ""
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			return n, fmt.Errorf("line %d is empty", n+1)
		}
		n++
		if err := Validate(line); err != nil {
			return n, fmt.Errorf("line %d: %w", n, err)
		}
		if bytes.HasPrefix(line, []byte(`{"type":"result"`)) {
			results++
		}
		last = string(line)
	}
	if err := sc.Err(); err != nil {
		return n, err
	}
	if n == 0 {
		return 0, fmt.Errorf("no lines")
	}
	if results != 1 || !bytes.HasPrefix([]byte(last), []byte(`{"type":"result"`)) {
		return n, fmt.Errorf("want exactly one result line, at the end; got %d (last line %s)", results, last)
	}
	return n, nil
}
