// Package schema reads and compiles the JSON Schemas structured answers are checked against (a
// file, stdin or inline JSON, drafts 2020-12 and draft-07, with google/jsonschema-go). It is apart
// from internal/structured because the validator's packages (jsonschema-go, and encoding/gob with
// it) cost every process that links them at start-up: the light qkit binary hands --schema to
// qkit-full instead.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/qkit-cli/qkit/internal/structured"
)

// Error is a schema that could not be read or compiled: the caller's mistake (exit 2),
// found before anything runs.
type Error struct {
	Source string // "FILE", "stdin" or "the inline schema"
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("schema %s: %v", e.Source, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// maxSchemaSize bounds what is read of a schema file or stdin.
const maxSchemaSize = 1 << 20

// Load reads the schema arg names: "-" reads stdin, text that starts with "{" (after blanks) is
// the schema itself, anything else is a file name. Then it compiles it (Compile).
func Load(arg string, stdin io.Reader) (*structured.Schema, error) {
	trimmed := strings.TrimSpace(arg)
	switch {
	case trimmed == "":
		return nil, &Error{Source: "argument", Err: errors.New("empty: give a file, - for stdin, or the schema as JSON")}
	case arg == "-":
		data, err := io.ReadAll(io.LimitReader(stdin, maxSchemaSize+1))
		if err != nil {
			return nil, &Error{Source: "on stdin", Err: err}
		}
		return compileSized(data, "on stdin")
	case strings.HasPrefix(trimmed, "{"):
		return Compile([]byte(arg), "given inline")
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, &Error{Source: arg, Err: plainPathError(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSchemaSize+1))
	if err != nil {
		return nil, &Error{Source: arg, Err: plainPathError(err)}
	}
	return compileSized(data, arg)
}

// plainPathError drops the path an *os.PathError repeats (the SchemaError names it already).
func plainPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func compileSized(data []byte, source string) (*structured.Schema, error) {
	if len(data) > maxSchemaSize {
		return nil, &Error{Source: source, Err: fmt.Errorf("larger than %d bytes", maxSchemaSize)}
	}
	return Compile(data, source)
}

// schemaURL is where the compiler files the schema; nothing is ever fetched from it.
const schemaURL = "qkit:///output-schema.json"

// Compile compiles data as a JSON Schema: draft 2020-12 unless its $schema names draft-07, the
// other draft the validator reads (google/jsonschema-go, which the MCP SDK links already: a
// validator whose package init compiles every draft's meta-schema cost every qkit command 6 ms).
// A $ref may point only inside the schema: no file and no URL is ever loaded (a schema from an MCP
// client must not read this machine's files). source names the schema in errors.
func Compile(data []byte, source string) (*structured.Schema, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not JSON: %v", err)}
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, isBool := doc.(bool); !isBool {
			return nil, &Error{Source: source, Err: errors.New("not a JSON Schema: a schema is a JSON object (or true/false)")}
		}
	}
	if err := checkShapes(numbered(data), draft07(doc)); err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not a JSON Schema: %v", err)}
	}
	ix, err := checkCycles(doc)
	if err == nil && ix != nil {
		err = ix.checkCost()
	}
	if err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not a schema qkit can use: %v", err)}
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(data, &sch); err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not a JSON Schema: %s", compileMessage(err))}
	}
	switch sch.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema":
	default:
		return nil, &Error{Source: source, Err: fmt.Errorf("not a JSON Schema qkit reads: $schema %q (draft 2020-12 and draft-07 are read)", sch.Schema)}
	}
	compiled, err := sch.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: refuseLoad})
	if err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not a JSON Schema: %s", compileMessage(err))}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, &Error{Source: source, Err: fmt.Errorf("not JSON: %v", err)}
	}
	return structured.NewSchema(compact.String(), validator{compiled, ix}), nil
}

// compileMessage is the compiler's error without the internal URL it files the schema under.
func compileMessage(err error) string {
	msg := strings.ReplaceAll(err.Error(), schemaURL, "schema")
	return strings.ReplaceAll(msg, "\n", "; ")
}

// refuseLoad refuses every external reference.
func refuseLoad(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("%s: the schema may refer only to itself ($ref to #/$defs/...), never to a file or URL", u)
}

// validator is a compiled schema whose messages name the schema as "schema", not by the internal
// URL it is filed under.
type validator struct {
	r  *jsonschema.Resolved
	ix *cycleIndex // nil for the schemas true and false
}

// Steps counts the steps of checking v (cost.go), up to limit+1.
func (v validator) Steps(doc any, limit int) int {
	if v.ix == nil {
		return 1
	}
	return v.ix.steps(doc, limit)
}

func (v validator) Validate(doc any) error {
	if err := v.r.Validate(doc); err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), schemaURL, "schema"))
	}
	return nil
}

// numbered is data decoded with its numbers as json.Number (data is known to be JSON): the shape
// check tells 2 from 2.5 and -1 exactly.
func numbered(data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	_ = dec.Decode(&v)
	return v
}

// draft07 tells whether the schema doc says it is draft-07 (by its $schema).
func draft07(doc any) bool {
	m, _ := doc.(map[string]any)
	s, _ := m["$schema"].(string)
	return strings.HasPrefix(s, "http://json-schema.org/draft-07/schema")
}
