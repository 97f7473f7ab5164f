package structured

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The quick check: a JSON document is checked against the common keywords of a schema in one pass
// over its bytes, without decoding it into values. The general validator decodes the document
// into maps and walks them by reflection: 5 to 10 ms for a reply of 100 KB, where the target is
// 1 ms for extraction and validation together. The quick check only ever says "valid for
// certain": a document it does not pass (invalid, or outside what it knows: an escaped property
// name, a number too long to compare exactly) goes to the general validator, which decides and
// words the problem. So it may be stricter than the validator, never looser; a schema with a
// keyword it does not know has no quick check at all.

// Type bits of quickSchema.types.
const (
	tNull = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber | tInteger, "integer": tInteger, "string": tString}

// quickSchema is a schema (or subschema) of the keywords the quick check knows; nil allows anything.
type quickSchema struct {
	never                  bool  // the schema false
	types                  uint8 // 0: any type
	props                  map[string]*quickSchema
	required               map[string]uint // name -> bit
	reqAll                 uint64          // every required bit
	addl                   *quickSchema    // for names not in props; nil: anything
	items                  *quickSchema
	enum                   []string // allowed values, JSON-encoded scalars ("\"a\"", "true", "null"); nil: no enum
	minLen                 int
	maxLen                 int // -1: none
	minItems               int
	maxItems               int // -1: none
	numeric                bool
	min, max, exMin, exMax float64 // bounds; ±Inf when absent
}

// annotations are keywords that do not constrain a document.
var annotations = map[string]bool{"$schema": true, "$comment": true, "title": true, "description": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// compileQuick builds the quick check of schema data, or nil when it uses a keyword (or a form of
// one) that the quick check does not know.
func compileQuick(data []byte) *quickSchema {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	q, ok := quickFrom(v)
	if !ok {
		return nil
	}
	if q == nil {
		q = &quickSchema{maxLen: -1, maxItems: -1}
	}
	return q
}

func quickFrom(v any) (*quickSchema, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return nil, true
		}
		return &quickSchema{never: true}, true
	case map[string]any:
		q := &quickSchema{maxLen: -1, maxItems: -1, min: math.Inf(-1), max: math.Inf(1), exMin: math.Inf(-1), exMax: math.Inf(1)}
		for k, val := range v {
			if annotations[k] {
				continue
			}
			if !q.keyword(k, val) {
				return nil, false
			}
		}
		return q, true
	}
	return nil, false
}

// keyword sets keyword k to val; false when the quick check does not know it or this form of it.
func (q *quickSchema) keyword(k string, val any) bool {
	var ok bool
	switch k {
	case "type":
		ok = q.setTypes(val)
	case "properties":
		m, isMap := val.(map[string]any)
		q.props, ok = make(map[string]*quickSchema, len(m)), isMap
		for name, sub := range m {
			var s *quickSchema
			if s, ok = quickFrom(sub); !ok {
				return false
			}
			q.props[name] = s
		}
	case "required":
		list, isList := val.([]any)
		if !isList || len(list) > 64 {
			return false
		}
		q.required = make(map[string]uint, len(list))
		for _, r := range list {
			name, isString := r.(string)
			if !isString {
				return false
			}
			if _, dup := q.required[name]; !dup {
				q.required[name] = uint(len(q.required))
			}
		}
		q.reqAll = 1<<len(q.required) - 1
		ok = true
	case "additionalProperties":
		q.addl, ok = quickFrom(val)
	case "items":
		q.items, ok = quickFrom(val) // an array of schemas (draft-07's tuples) is not a schema: refused
	case "enum":
		list, isList := val.([]any)
		if !isList {
			return false
		}
		q.enum, ok = []string{}, true
		for _, e := range list {
			if ok = q.addEnum(e); !ok {
				return false
			}
		}
	case "const":
		ok = q.addEnum(val)
	case "minLength", "maxLength", "minItems", "maxItems":
		var n int
		if n, ok = count(val); ok {
			*map[string]*int{"minLength": &q.minLen, "maxLength": &q.maxLen, "minItems": &q.minItems, "maxItems": &q.maxItems}[k] = n
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		num, isNum := val.(json.Number)
		var f float64
		if f, ok = exactFloat(string(num)); ok && isNum {
			*map[string]*float64{"minimum": &q.min, "maximum": &q.max, "exclusiveMinimum": &q.exMin, "exclusiveMaximum": &q.exMax}[k] = f
			q.numeric = true
		}
		ok = ok && isNum
	}
	return ok
}

func (q *quickSchema) setTypes(val any) bool {
	names := []any{val}
	if list, isList := val.([]any); isList {
		names = list
	}
	for _, n := range names {
		s, isString := n.(string)
		bits, known := typeBits[s]
		if !isString || !known {
			return false
		}
		q.types |= bits
	}
	return len(names) > 0
}

// addEnum adds e to the allowed values: a string, a boolean or null (numbers compare by value,
// 1 and 1.0 alike, and objects by members: left to the validator).
func (q *quickSchema) addEnum(e any) bool {
	switch e.(type) {
	case string, bool, nil:
		b, err := json.Marshal(e)
		if err != nil {
			return false
		}
		q.enum = append(q.enum, string(b))
		return true
	}
	return false
}

// count reads a keyword's non-negative integer.
func count(val any) (int, bool) {
	num, isNum := val.(json.Number)
	n, err := strconv.Atoi(string(num))
	return n, isNum && err == nil && n >= 0
}

// exactFloat parses a JSON number whose order against another such number float64 keeps: at most
// 15 significant digits (distinct decimals of 15 digits are distinct doubles) and a magnitude well
// inside the normal range.
func exactFloat(lit string) (float64, bool) {
	digits := 0
	for i := 0; i < len(lit) && lit[i] != 'e' && lit[i] != 'E'; i++ {
		if lit[i] >= '0' && lit[i] <= '9' {
			digits++
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || digits > 15 || (f != 0 && (math.Abs(f) < 1e-300 || math.Abs(f) > 1e300)) {
		return 0, false
	}
	return f, true
}

// maxQuickDepth bounds nesting; deeper documents go to the validator.
const maxQuickDepth = 512

// quickCheck reports whether doc is one JSON document valid against q, for certain; with q nil,
// whether it is one JSON document that encoding/json decodes (json.Valid's answer, except that
// nesting deeper than maxQuickDepth and numbers beyond float64 are not known valid).
func quickCheck(q *quickSchema, doc string) bool {
	r := &quickReader{data: doc}
	if !r.value(q) {
		return false
	}
	r.space()
	return r.i == len(r.data)
}

type quickReader struct {
	data  string
	i     int
	depth int
}

func (r *quickReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// value reads one value at r.i and reports whether it is valid against q (nil: anything).
func (r *quickReader) value(q *quickSchema) bool {
	r.space()
	if r.i >= len(r.data) || q != nil && q.never {
		return false
	}
	switch c := r.data[r.i]; {
	case c == '{':
		return r.object(q)
	case c == '[':
		return r.array(q)
	case c == '"':
		start := r.i
		raw, escaped, ok := r.str()
		return ok && q.scalar(tString, r.data[start:r.i]) && q.length(raw, escaped)
	case c == 't':
		return r.word("true") && q.scalar(tBoolean, r.data[r.i-4:r.i])
	case c == 'f':
		return r.word("false") && q.scalar(tBoolean, r.data[r.i-5:r.i])
	case c == 'n':
		return r.word("null") && q.scalar(tNull, r.data[r.i-4:r.i])
	}
	start := r.i
	integer, ok := r.number()
	if !ok {
		return false
	}
	if lit := r.data[start:r.i]; !integer || len(lit) > 300 {
		// Too large for a float64 (1e400): encoding/json does not decode it, so the validator
		// refuses the document.
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			return false
		}
	}
	if q == nil {
		return true
	}
	t := uint8(tNumber)
	if integer {
		t = tInteger
	}
	if q.enum != nil || q.types != 0 && q.types&t == 0 {
		return false
	}
	if !q.numeric {
		return true
	}
	f, exact := exactFloat(r.data[start:r.i])
	return exact && f >= q.min && f <= q.max && f > q.exMin && f < q.exMax
}

// scalar checks a string, boolean or null token (tok, as written) against q's type and enum.
func (q *quickSchema) scalar(t uint8, tok string) bool {
	if q == nil {
		return true
	}
	if q.types != 0 && q.types&t == 0 {
		return false
	}
	if q.enum == nil {
		return true
	}
	for _, e := range q.enum {
		if e == tok {
			return true // an escaped string that matches is written as json.Marshal writes it
		}
	}
	return false
}

// length checks a string's length in characters; an escaped one is left to the validator.
func (q *quickSchema) length(raw string, escaped bool) bool {
	if q == nil || q.minLen == 0 && q.maxLen < 0 {
		return true
	}
	if escaped || !utf8.ValidString(raw) {
		return false
	}
	n := utf8.RuneCountInString(raw)
	return n >= q.minLen && (q.maxLen < 0 || n <= q.maxLen)
}

func (r *quickReader) object(q *quickSchema) bool {
	if q != nil && (q.types != 0 && q.types&tObject == 0 || q.enum != nil) {
		return false
	}
	if r.depth++; r.depth > maxQuickDepth {
		return false
	}
	defer func() { r.depth-- }()
	r.i++ // {
	var seen uint64
	r.space()
	if r.i < len(r.data) && r.data[r.i] == '}' {
		r.i++
		return q == nil || seen == q.reqAll
	}
	for {
		r.space()
		if r.i >= len(r.data) || r.data[r.i] != '"' {
			return false
		}
		name, escaped, ok := r.str()
		if !ok || escaped {
			return false // an escaped name would have to be decoded to be looked up
		}
		r.space()
		if r.i >= len(r.data) || r.data[r.i] != ':' {
			return false
		}
		r.i++
		var sub *quickSchema
		if q != nil {
			if bit, req := q.required[string(name)]; req {
				seen |= 1 << bit
			}
			if p, known := q.props[string(name)]; known {
				sub = p
			} else {
				sub = q.addl
			}
		}
		if !r.value(sub) {
			return false
		}
		r.space()
		if r.i >= len(r.data) {
			return false
		}
		switch r.data[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return q == nil || seen == q.reqAll
		default:
			return false
		}
	}
}

func (r *quickReader) array(q *quickSchema) bool {
	if q != nil && (q.types != 0 && q.types&tArray == 0 || q.enum != nil) {
		return false
	}
	if r.depth++; r.depth > maxQuickDepth {
		return false
	}
	defer func() { r.depth-- }()
	r.i++ // [
	var items *quickSchema
	minItems, maxItems := 0, -1
	if q != nil {
		items, minItems, maxItems = q.items, q.minItems, q.maxItems
	}
	n := 0
	r.space()
	if r.i < len(r.data) && r.data[r.i] == ']' {
		r.i++
		return n >= minItems
	}
	for {
		if !r.value(items) {
			return false
		}
		n++
		r.space()
		if r.i >= len(r.data) {
			return false
		}
		switch r.data[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return n >= minItems && (maxItems < 0 || n <= maxItems)
		default:
			return false
		}
	}
}

// str reads a string at r.i: its bytes between the quotes, whether it holds escapes, and whether
// it is a valid JSON string.
func (r *quickReader) str() (raw string, escaped, ok bool) {
	r.i++ // "
	start := r.i
	for r.i < len(r.data) {
		for r.i < len(r.data) && plainInString[r.data[r.i]] {
			r.i++
		}
		if r.i == len(r.data) {
			break
		}
		c := r.data[r.i]
		switch {
		case c == '"':
			r.i++
			return r.data[start : r.i-1], escaped, true
		case c < 0x20:
			return "", false, false
		case c == '\\':
			escaped = true
			if r.i+1 >= len(r.data) {
				return "", false, false
			}
			switch r.data[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if r.i+6 > len(r.data) {
					return "", false, false
				}
				for _, h := range r.data[r.i+2 : r.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return "", false, false
					}
				}
				r.i += 6
			default:
				return "", false, false
			}
		default:
			r.i++
		}
	}
	return "", false, false
}

// plainInString marks the bytes a JSON string holds as they are: all but the quote, the
// backslash and the control characters.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (r *quickReader) word(w string) bool {
	if !strings.HasPrefix(r.data[r.i:], w) {
		return false
	}
	r.i += len(w)
	return true
}

// number reads a JSON number at r.i and whether it is written as an integer (no fraction, no
// exponent).
func (r *quickReader) number() (integer, ok bool) {
	d := r.data
	if r.i < len(d) && d[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(d) && d[r.i] >= '0' && d[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	switch {
	case r.i < len(d) && d[r.i] == '0':
		r.i++
	case digits() == 0:
		return false, false
	}
	integer = true
	if r.i < len(d) && d[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	if r.i < len(d) && (d[r.i] == 'e' || d[r.i] == 'E') {
		r.i++
		if r.i < len(d) && (d[r.i] == '+' || d[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	return integer, true
}
