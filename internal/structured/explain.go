package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The validator (google/jsonschema-go) decides whether an answer is valid, but its message names
// the place in the schema ("validating /properties/age: type: 36 has type ..."), not in the
// answer, and shows values as Go prints them (a string without its quotes, an object as map[]).
// When it says no, explain walks the schema and the answer together to the first problem and
// words it for the agent and the user: the place in the answer as a JSON pointer, the value as
// JSON (cut when long). It knows every keyword the validator does except $dynamicRef, a $ref
// outside "#..." and unevaluatedItems/unevaluatedProperties; where it meets one of those, or
// finds nothing, the validator's own message is used, at the answer's root.

// maxShown is how much of a value's JSON a problem shows.
const maxShown = 80

// explainer walks one schema document (decoded by json.Unmarshal) against an answer.
type explainer struct {
	root    any
	draft07 bool
	unsure  bool // met a keyword it does not follow
	depth   int
}

// explain is the first problem of v against the schema root, "at POINTER: message", or "" when it
// finds none (or met a keyword it does not follow).
func explain(root any, draft07 bool, v any) string {
	e := &explainer{root: root, draft07: draft07}
	msg := e.check(root, v, "")
	if msg == "" || e.unsure {
		return ""
	}
	return msg
}

func at(ptr, format string, args ...any) string {
	b, _ := json.Marshal(ptr)
	return "at " + string(b) + ": " + fmt.Sprintf(format, args...)
}

// shown is v as JSON, cut after maxShown characters.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if utf8.RuneCountInString(s) > maxShown {
		s = string([]rune(s)[:maxShown]) + "…"
	}
	return s
}

// jsonType is v's JSON type name ("integer" for a whole number).
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

var article = map[string]string{"null": "null", "boolean": "a boolean", "integer": "an integer", "number": "a number",
	"string": "a string", "array": "an array", "object": "an object"}

func typeMatches(v any, want string) bool {
	got := jsonType(v)
	return got == want || (want == "number" && got == "integer")
}

func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

// check is the first problem of v (at ptr in the answer) against schema s, or "".
func (e *explainer) check(s, v any, ptr string) string {
	if e.depth > 200 {
		e.unsure = true
		return ""
	}
	e.depth++
	defer func() { e.depth-- }()
	switch s := s.(type) {
	case bool:
		if !s {
			return at(ptr, "%s is not allowed here (the schema is false)", shown(v))
		}
		return ""
	case map[string]any:
		return e.checkObject(s, v, ptr)
	}
	e.unsure = true
	return ""
}

func (e *explainer) checkObject(s map[string]any, v any, ptr string) string {
	for _, k := range []string{"$dynamicRef", "unevaluatedItems", "unevaluatedProperties"} {
		if _, ok := s[k]; ok {
			e.unsure = true
			return ""
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		target, found := e.local(ref)
		if !found {
			e.unsure = true
			return ""
		}
		if p := e.check(target, v, ptr); p != "" {
			return p
		}
		if e.draft07 {
			return "" // draft-07 ignores the keywords beside $ref
		}
	}
	if p := e.checkScalar(s, v, ptr); p != "" {
		return p
	}
	if p := e.checkLogic(s, v, ptr); p != "" {
		return p
	}
	switch v := v.(type) {
	case []any:
		return e.checkArray(s, v, ptr)
	case map[string]any:
		return e.checkMap(s, v, ptr)
	}
	return ""
}

// local is the part of the schema a "#..." reference names.
func (e *explainer) local(ref string) (any, bool) {
	if ref == "#" {
		return e.root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	cur := e.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (e *explainer) checkScalar(s map[string]any, v any, ptr string) string {
	switch t := s["type"].(type) {
	case string:
		if !typeMatches(v, t) {
			return at(ptr, "%s is %s; the schema wants %s", shown(v), article[jsonType(v)], article[t])
		}
	case []any:
		ok := false
		names := make([]string, 0, len(t))
		for _, n := range t {
			name, _ := n.(string)
			names = append(names, name)
			ok = ok || typeMatches(v, name)
		}
		if !ok {
			return at(ptr, "%s is %s; the schema wants one of: %s", shown(v), article[jsonType(v)], strings.Join(names, ", "))
		}
	}
	if list, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range list {
			found = found || reflect.DeepEqual(x, v)
		}
		if !found {
			return at(ptr, "%s is not one of the enum values %s", shown(v), shown(list))
		}
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, v) {
		return at(ptr, "%s is not the const value %s", shown(v), shown(c))
	}
	if f, ok := v.(float64); ok {
		if m, ok := num(s["multipleOf"]); ok && m > 0 {
			if q := f / m; q != math.Trunc(q) || math.IsInf(q, 0) {
				return at(ptr, "%s is not a multiple of %s (multipleOf)", shown(v), shown(m))
			}
		}
		if m, ok := num(s["minimum"]); ok && f < m {
			return at(ptr, "%s is less than the minimum %s", shown(v), shown(m))
		}
		if m, ok := num(s["maximum"]); ok && f > m {
			return at(ptr, "%s is greater than the maximum %s", shown(v), shown(m))
		}
		if m, ok := num(s["exclusiveMinimum"]); ok && f <= m {
			return at(ptr, "%s is not greater than %s (exclusiveMinimum)", shown(v), shown(m))
		}
		if m, ok := num(s["exclusiveMaximum"]); ok && f >= m {
			return at(ptr, "%s is not less than %s (exclusiveMaximum)", shown(v), shown(m))
		}
	}
	if str, ok := v.(string); ok {
		n := float64(utf8.RuneCountInString(str))
		if m, ok := num(s["minLength"]); ok && n < m {
			return at(ptr, "%s has %d characters, fewer than minLength %s", shown(v), int(n), shown(m))
		}
		if m, ok := num(s["maxLength"]); ok && n > m {
			return at(ptr, "%s has %d characters, more than maxLength %s", shown(v), int(n), shown(m))
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(str) {
				return at(ptr, "%s does not match the pattern %s", shown(v), shown(p))
			}
		}
	}
	return ""
}

func (e *explainer) checkLogic(s map[string]any, v any, ptr string) string {
	if list, ok := s["allOf"].([]any); ok {
		for _, b := range list {
			if p := e.check(b, v, ptr); p != "" {
				return p
			}
		}
	}
	if list, ok := s["anyOf"].([]any); ok && len(list) > 0 {
		var first string
		for _, b := range list {
			p := e.check(b, v, ptr)
			if p == "" {
				first = ""
				break
			}
			if first == "" {
				first = p
			}
		}
		if first != "" {
			if len(list) == 1 {
				return first
			}
			return at(ptr, "%s is valid against none of the %d schemas of anyOf (the first says: %s)", shown(v), len(list), first)
		}
	}
	if list, ok := s["oneOf"].([]any); ok && len(list) > 0 {
		var valid []string
		var first string
		for i, b := range list {
			if p := e.check(b, v, ptr); p == "" {
				valid = append(valid, strconv.Itoa(i))
			} else if first == "" {
				first = p
			}
		}
		switch {
		case len(valid) == 0 && len(list) == 1:
			return first
		case len(valid) == 0:
			return at(ptr, "%s is valid against none of the %d schemas of oneOf (the first says: %s)", shown(v), len(list), first)
		case len(valid) > 1:
			return at(ptr, "%s is valid against the schemas %s of oneOf; exactly one must accept it", shown(v), strings.Join(valid, " and "))
		}
	}
	if not, ok := s["not"]; ok {
		saved := e.unsure
		if p := e.check(not, v, ptr); p == "" && e.unsure == saved {
			return at(ptr, "%s is valid against the schema under not", shown(v))
		}
	}
	if cond, ok := s["if"]; ok {
		branch := "else"
		if e.check(cond, v, ptr) == "" {
			branch = "then"
		}
		if b, ok := s[branch]; ok {
			if p := e.check(b, v, ptr); p != "" {
				return p
			}
		}
	}
	return ""
}

func (e *explainer) checkArray(s map[string]any, v []any, ptr string) string {
	if m, ok := num(s["minItems"]); ok && float64(len(v)) < m {
		return at(ptr, "the array has %d items, fewer than minItems %s", len(v), shown(m))
	}
	if m, ok := num(s["maxItems"]); ok && float64(len(v)) > m {
		return at(ptr, "the array has %d items, more than maxItems %s", len(v), shown(m))
	}
	if u, _ := s["uniqueItems"].(bool); u {
		for i := range v {
			for j := i + 1; j < len(v); j++ {
				if reflect.DeepEqual(v[i], v[j]) {
					return at(ptr, "items %d and %d are equal (uniqueItems)", i, j)
				}
			}
		}
	}
	// The schemas for positions, then the one for the rest.
	var prefix []any
	var rest any
	hasRest := false
	if e.draft07 {
		if list, ok := s["items"].([]any); ok {
			prefix = list
			rest, hasRest = s["additionalItems"]
		} else {
			rest, hasRest = s["items"]
		}
	} else {
		prefix, _ = s["prefixItems"].([]any)
		rest, hasRest = s["items"]
	}
	for i, item := range v {
		var sub any
		switch {
		case i < len(prefix):
			sub = prefix[i]
		case hasRest:
			sub = rest
		default:
			continue
		}
		if p := e.check(sub, item, ptr+"/"+strconv.Itoa(i)); p != "" {
			return p
		}
	}
	if c, ok := s["contains"]; ok {
		n := 0
		for _, item := range v {
			if e.check(c, item, "") == "" {
				n++
			}
		}
		lo, hi := 1.0, math.Inf(1)
		if m, ok := num(s["minContains"]); ok && !e.draft07 {
			lo = m
		}
		if m, ok := num(s["maxContains"]); ok && !e.draft07 {
			hi = m
		}
		if float64(n) < lo {
			return at(ptr, "%d items are valid against contains, fewer than %s", n, shown(lo))
		}
		if float64(n) > hi {
			return at(ptr, "%d items are valid against contains, more than maxContains %s", n, shown(hi))
		}
	}
	return ""
}

func (e *explainer) checkMap(s map[string]any, v map[string]any, ptr string) string {
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	if m, ok := num(s["minProperties"]); ok && float64(len(v)) < m {
		return at(ptr, "the object has %d properties, fewer than minProperties %s", len(v), shown(m))
	}
	if m, ok := num(s["maxProperties"]); ok && float64(len(v)) > m {
		return at(ptr, "the object has %d properties, more than maxProperties %s", len(v), shown(m))
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, ok := r.(string)
			if _, present := v[name]; ok && !present {
				return at(ptr, "the required property %s is missing", shown(name))
			}
		}
	}
	dependent := func(key string) map[string]any { m, _ := s[key].(map[string]any); return m }
	for _, key := range []string{"dependentRequired", "dependentSchemas", "dependencies"} {
		deps := dependent(key)
		for _, name := range sortedNames(deps) {
			if _, present := v[name]; !present {
				continue
			}
			if list, ok := deps[name].([]any); ok {
				for _, r := range list {
					need, _ := r.(string)
					if _, present := v[need]; !present {
						return at(ptr, "the property %s is required when %s is present", shown(need), shown(name))
					}
				}
				continue
			}
			if p := e.check(deps[name], v, ptr); p != "" {
				return p
			}
		}
	}
	props := dependent("properties")
	patterns := dependent("patternProperties")
	addl, hasAddl := s["additionalProperties"]
	if pn, ok := s["propertyNames"]; ok {
		for _, name := range names {
			if p := e.check(pn, name, ""); p != "" {
				return at(ptr+"/"+pointerToken(name), "the property name %s is not valid against propertyNames", shown(name))
			}
		}
	}
	for _, name := range names {
		child := ptr + "/" + pointerToken(name)
		matched := false
		if sub, ok := props[name]; ok {
			matched = true
			if p := e.check(sub, v[name], child); p != "" {
				return p
			}
		}
		for _, pat := range sortedNames(patterns) {
			re, err := regexp.Compile(pat)
			if err != nil || !re.MatchString(name) {
				continue
			}
			matched = true
			if p := e.check(patterns[pat], v[name], child); p != "" {
				return p
			}
		}
		if !matched && hasAddl {
			if b, ok := addl.(bool); ok && !b {
				return at(child, "the property %s is not allowed (additionalProperties is false)", shown(name))
			}
			if p := e.check(addl, v[name], child); p != "" {
				return p
			}
		}
	}
	return ""
}

func sortedNames(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
