package structured

import (
	"encoding/json"
	"strings"
)

// ObjectsOnly tells whether the schema accepts nothing but JSON objects, as a front end that can
// carry only an object needs (MCP's structuredContent). It is sure of it when the root says
// "type": "object", when its const or every enum value is an object, when one allOf branch (or a
// $ref inside the schema) accepts only objects, or when every anyOf or oneOf branch does; false
// otherwise, even for a schema whose other keywords happen to exclude every other type.
func (s *Schema) ObjectsOnly() bool {
	var root any
	if err := json.Unmarshal([]byte(s.Text), &root); err != nil {
		return false
	}
	m, _ := root.(map[string]any)
	sch, _ := m["$schema"].(string)
	draft07 := strings.HasPrefix(sch, "http://json-schema.org/draft-07/schema")
	return objectsOnly(root, root, draft07, 0)
}

// maxObjectsDepth bounds the $ref hops objectsOnly follows (a loop is refused at compile time;
// this keeps the walk finite whatever it is given).
const maxObjectsDepth = 32

func objectsOnly(v, root any, draft07 bool, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok || depth > maxObjectsDepth {
		return false
	}
	if ref, ok := m["$ref"].(string); ok {
		if objectsOnly(localRef(root, ref), root, draft07, depth+1) {
			return true
		}
		if draft07 {
			return false // draft-07 ignores every keyword beside $ref
		}
	}
	switch t := m["type"].(type) {
	case string:
		if t == "object" {
			return true
		}
	case []any:
		if len(t) == 1 && t[0] == "object" {
			return true
		}
	}
	if c, ok := m["const"]; ok {
		if _, isObj := c.(map[string]any); isObj {
			return true
		}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		all := true
		for _, x := range e {
			if _, isObj := x.(map[string]any); !isObj {
				all = false
			}
		}
		if all {
			return true
		}
	}
	if list, ok := m["allOf"].([]any); ok {
		for _, b := range list {
			if objectsOnly(b, root, draft07, depth+1) {
				return true
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok && len(list) > 0 {
			all := true
			for _, b := range list {
				if !objectsOnly(b, root, draft07, depth+1) {
					all = false
					break
				}
			}
			if all {
				return true
			}
		}
	}
	return false
}

// localRef is the part of root a "#/..." reference names, or nil.
func localRef(root any, ref string) any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	cur := root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i := 0
			for _, r := range tok {
				if r < '0' || r > '9' {
					return nil
				}
				i = i*10 + int(r-'0')
				if i >= len(c) {
					return nil
				}
			}
			if tok == "" {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}
