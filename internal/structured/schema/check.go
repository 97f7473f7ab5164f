package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// The compiler (google/jsonschema-go) reads each keyword into a Go field and checks little more:
// "type":"objekt", "enum":[] or "minLength":-1 compile, and the agent then runs for an answer no
// value can be valid against. checkShapes checks, before anything runs, that each keyword the
// drafts define has the form the draft's meta-schema gives it, so such a schema is refused with
// the place of the mistake. Keywords the drafts do not define are left alone (the drafts allow
// them). An empty enum is refused too: the drafts only say it SHOULD have an element, but it
// accepts no value at all.

// jsonTypes are the names "type" takes.
var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

const jsonTypeList = "null, boolean, object, array, number, string or integer"

// Keyword forms.
const (
	kSchema         = iota // a schema (an object, true or false)
	kSchemaMap             // an object whose values are schemas
	kSchemaList            // a non-empty array of schemas
	kCount                 // a non-negative integer
	kNumber                // a number
	kPositive              // a number above 0
	kString                // a string
	kBool                  // true or false
	kType                  // a type name, or a non-empty array of distinct type names
	kEnum                  // a non-empty array
	kNames                 // an array of distinct strings
	kNamesMap              // an object whose values are arrays of distinct strings
	kRegex                 // a string that is a regular expression
	kRegexSchemaMap        // an object whose names are regular expressions and whose values are schemas
	kArray                 // an array
	kItems                 // 2020-12: a schema; draft-07: a schema or an array of schemas
	kDependencies          // draft-07: an object whose values are schemas or arrays of distinct strings
)

// keywordForms are the keywords of draft 2020-12 and draft-07 with their forms.
var keywordForms = map[string]int{
	"$id": kString, "$schema": kString, "$ref": kString, "$comment": kString, "$anchor": kString,
	"$dynamicAnchor": kString, "$dynamicRef": kString,
	"$defs": kSchemaMap, "definitions": kSchemaMap,
	"title": kString, "description": kString, "deprecated": kBool, "readOnly": kBool, "writeOnly": kBool,
	"examples": kArray, "format": kString, "contentEncoding": kString, "contentMediaType": kString,
	"contentSchema": kSchema,
	"type":          kType, "enum": kEnum,
	"multipleOf": kPositive, "minimum": kNumber, "maximum": kNumber, "exclusiveMinimum": kNumber, "exclusiveMaximum": kNumber,
	"minLength": kCount, "maxLength": kCount, "pattern": kRegex,
	"items": kItems, "prefixItems": kSchemaList, "additionalItems": kSchema, "unevaluatedItems": kSchema, "contains": kSchema,
	"minItems": kCount, "maxItems": kCount, "uniqueItems": kBool, "minContains": kCount, "maxContains": kCount,
	"properties": kSchemaMap, "patternProperties": kRegexSchemaMap, "additionalProperties": kSchema,
	"unevaluatedProperties": kSchema, "propertyNames": kSchema, "required": kNames,
	"minProperties": kCount, "maxProperties": kCount, "dependentRequired": kNamesMap, "dependentSchemas": kSchemaMap,
	"dependencies": kDependencies,
	"allOf":        kSchemaList, "anyOf": kSchemaList, "oneOf": kSchemaList, "not": kSchema,
	"if": kSchema, "then": kSchema, "else": kSchema,
}

// ShapeError is a keyword whose value has not the form its draft gives it: Pointer is its place
// in the schema (a JSON pointer).
type ShapeError struct {
	Pointer string
	Message string
}

func (e *ShapeError) Error() string {
	return termtext.VisibleLine(fmt.Sprintf("at %s: %s", quote(e.Pointer), e.Message))
}

// checkShapes checks the schema doc (decoded with json.Number) keyword by keyword; draft07 allows
// the draft-07 forms (items as an array of schemas).
func checkShapes(doc any, draft07 bool) error {
	return checkSchema(doc, "", draft07)
}

func checkSchema(v any, ptr string, draft07 bool) error {
	switch v := v.(type) {
	case bool:
		return nil
	case map[string]any:
		// In a fixed order, so the same schema always names the same first mistake.
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			form, known := keywordForms[k]
			if !known {
				continue
			}
			if err := checkKeyword(form, v[k], ptr+"/"+escapePointer(k), draft07); err != nil {
				return err
			}
		}
		return nil
	}
	return &ShapeError{Pointer: ptr, Message: "a schema is an object, true or false, not " + describe(v)}
}

func checkKeyword(form int, v any, ptr string, draft07 bool) error {
	bad := func(want string) error {
		return &ShapeError{Pointer: ptr, Message: fmt.Sprintf("%s is not %s", describe(v), want)}
	}
	switch form {
	case kSchema:
		return checkSchema(v, ptr, draft07)
	case kItems:
		if list, ok := v.([]any); ok && draft07 {
			return checkSchemaList(list, ptr, draft07)
		}
		if _, ok := v.([]any); ok {
			return bad("a schema (an array of schemas is draft-07's items; draft 2020-12 says prefixItems)")
		}
		return checkSchema(v, ptr, draft07)
	case kSchemaMap, kRegexSchemaMap:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of schemas")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if form == kRegexSchemaMap {
				if _, err := regexp.Compile(k); err != nil {
					return &ShapeError{Pointer: ptr, Message: fmt.Sprintf("%s is not a regular expression qkit reads: %v", quote(k), err)}
				}
			}
			if err := checkSchema(m[k], ptr+"/"+escapePointer(k), draft07); err != nil {
				return err
			}
		}
		return nil
	case kSchemaList:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return bad("a non-empty array of schemas")
		}
		return checkSchemaList(list, ptr, draft07)
	case kDependencies:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of schemas and arrays of property names")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := ptr + "/" + escapePointer(k)
			if names, ok := m[k].([]any); ok {
				if err := checkNames(names, p); err != nil {
					return err
				}
				continue
			}
			if err := checkSchema(m[k], p, draft07); err != nil {
				return err
			}
		}
		return nil
	case kCount:
		n, ok := v.(json.Number)
		if !ok {
			return bad("a non-negative integer")
		}
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil && i >= 0 {
			return nil
		}
		if f, err := n.Float64(); err == nil && f >= 0 && f == float64(int64(f)) && strings.ContainsAny(n.String(), ".eE") {
			return nil // 2.0 and 2e0 are integers too
		}
		return bad("a non-negative integer")
	case kNumber, kPositive:
		n, ok := v.(json.Number)
		if !ok {
			return bad("a number")
		}
		if form == kPositive {
			if f, err := n.Float64(); err != nil || f <= 0 {
				return bad("a number above 0")
			}
		}
		return nil
	case kString:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
		return nil
	case kRegex:
		s, ok := v.(string)
		if !ok {
			return bad("a string")
		}
		if _, err := regexp.Compile(s); err != nil {
			return &ShapeError{Pointer: ptr, Message: fmt.Sprintf("%s is not a regular expression qkit reads: %v", quote(s), err)}
		}
		return nil
	case kBool:
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
		return nil
	case kArray:
		if _, ok := v.([]any); !ok {
			return bad("an array")
		}
		return nil
	case kType:
		switch t := v.(type) {
		case string:
			if !jsonTypes[t] {
				return &ShapeError{Pointer: ptr, Message: fmt.Sprintf("%s is not a type: the types are %s", quote(t), jsonTypeList)}
			}
			return nil
		case []any:
			if len(t) == 0 {
				return bad("a type name or a non-empty array of them")
			}
			seen := map[string]bool{}
			for i, e := range t {
				s, ok := e.(string)
				p := ptr + "/" + strconv.Itoa(i)
				if !ok {
					return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is not a type name", describe(e))}
				}
				if !jsonTypes[s] {
					return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is not a type: the types are %s", quote(s), jsonTypeList)}
				}
				if seen[s] {
					return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is named twice", quote(s))}
				}
				seen[s] = true
			}
			return nil
		}
		return bad("a type name or a non-empty array of them")
	case kEnum:
		list, ok := v.([]any)
		if !ok {
			return bad("an array")
		}
		if len(list) == 0 {
			return &ShapeError{Pointer: ptr, Message: "an empty enum: no value can be valid against it"}
		}
		return nil
	case kNames:
		list, ok := v.([]any)
		if !ok {
			return bad("an array of property names")
		}
		return checkNames(list, ptr)
	case kNamesMap:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of arrays of property names")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := ptr + "/" + escapePointer(k)
			list, ok := m[k].([]any)
			if !ok {
				return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is not an array of property names", describe(m[k]))}
			}
			if err := checkNames(list, p); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

func checkSchemaList(list []any, ptr string, draft07 bool) error {
	for i, s := range list {
		if err := checkSchema(s, ptr+"/"+strconv.Itoa(i), draft07); err != nil {
			return err
		}
	}
	return nil
}

// checkNames checks an array of distinct property names.
func checkNames(list []any, ptr string) error {
	seen := map[string]bool{}
	for i, e := range list {
		s, ok := e.(string)
		p := ptr + "/" + strconv.Itoa(i)
		if !ok {
			return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is not a property name (a string)", describe(e))}
		}
		if seen[s] {
			return &ShapeError{Pointer: p, Message: fmt.Sprintf("%s is named twice", quote(s))}
		}
		seen[s] = true
	}
	return nil
}

// escapePointer escapes a name for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// describe names a JSON value's kind and shows a short one: what the message says was found.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case string:
		return quote(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}

// quote is s as a JSON string, cut after 60 characters: schema text goes into error messages.
func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}
