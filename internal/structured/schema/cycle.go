package schema

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// A schema that reaches itself again through $ref without going into a part of the value
// ({"$ref":"#"}, or two $defs that refer to each other through allOf) compiles, and the validator
// then recurses until the Go runtime stops the whole process with a stack overflow, which no
// recover catches: qkit ask, or the MCP server with every call in flight, dies after the agent
// has run. checkCycles refuses such a schema before anything runs. It follows the keywords that
// apply a schema to the same value ($ref, $dynamicRef, allOf, anyOf, oneOf, not, if, then, else,
// dependentSchemas, draft-07's dependencies); every other applicator goes into a part of the
// value, which ends.

// node is one schema of the document: its place (a JSON pointer from the root) and base URI.
type node struct {
	ptr  string
	base *url.URL
	v    map[string]any
}

type cycleIndex struct {
	nodes     map[string]*node // by pointer
	resources map[string]*node // by base URI (no fragment): the root and each $id
	anchors   map[string]*node // by base URI + "#" + anchor
	dynamic   map[string][]*node
	// inPlace are edges of every node, filled once the document is indexed: read-only after,
	// so one compiled schema may check answers concurrently.
	inPlace map[*node][]*node
}

// inPlace are the keywords whose schemas apply to the same value: one schema, a list, or a map.
var inPlace = map[string]int{"allOf": kSchemaList, "anyOf": kSchemaList, "oneOf": kSchemaList, "not": kSchema,
	"if": kSchema, "then": kSchema, "else": kSchema, "dependentSchemas": kSchemaMap}

// checkCycles refuses a schema doc (already shape-checked) with a $ref loop that does not go into
// the value. It returns the document's index (nil for the schemas true and false).
func checkCycles(doc any) (*cycleIndex, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, nil
	}
	base, _ := url.Parse(schemaURL)
	ix := &cycleIndex{nodes: map[string]*node{}, resources: map[string]*node{}, anchors: map[string]*node{}, dynamic: map[string][]*node{}}
	ix.add(root, "", base)
	ix.inPlace = make(map[*node][]*node, len(ix.nodes))
	for _, n := range ix.nodes {
		ix.inPlace[n] = ix.edges(n)
	}
	// Depth-first search over the in-place edges; state 1: on the path, 2: done.
	state := map[string]int{}
	var visit func(n *node) error
	visit = func(n *node) error {
		switch state[n.ptr] {
		case 1:
			return &ShapeError{Pointer: n.ptr, Message: "the schema comes back here through $ref without going into a part of the value: validating would never end"}
		case 2:
			return nil
		}
		state[n.ptr] = 1
		for _, next := range ix.inPlace[n] {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[n.ptr] = 2
		return nil
	}
	for _, k := range sortedNodeKeys(ix.nodes) {
		if err := visit(ix.nodes[k]); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

func sortedNodeKeys(m map[string]*node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// add indexes the schema v at ptr and every schema inside it.
func (ix *cycleIndex) add(v any, ptr string, parent *url.URL) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	base, resource := parent, ptr == ""
	if id, ok := m["$id"].(string); ok && !strings.HasPrefix(id, "#") {
		if u, err := parent.Parse(id); err == nil {
			base, resource = u, true
			base.Fragment = ""
		}
	}
	n := &node{ptr: ptr, base: base, v: m}
	ix.nodes[ptr] = n
	if resource {
		ix.resources[base.String()] = n
	}
	if a, ok := m["$anchor"].(string); ok {
		ix.anchors[base.String()+"#"+a] = n
	}
	if id, ok := m["$id"].(string); ok && strings.HasPrefix(id, "#") { // draft-07's anchors
		ix.anchors[base.String()+id] = n
	}
	if a, ok := m["$dynamicAnchor"].(string); ok {
		ix.anchors[base.String()+"#"+a] = n
		ix.dynamic[a] = append(ix.dynamic[a], n)
	}
	for k, sub := range m {
		form, known := keywordForms[k]
		if !known {
			continue
		}
		p := ptr + "/" + escapePointer(k)
		switch form {
		case kSchema:
			ix.add(sub, p, base)
		case kItems, kSchemaList:
			if list, ok := sub.([]any); ok {
				for i, s := range list {
					ix.add(s, p+"/"+strconv.Itoa(i), base)
				}
			} else {
				ix.add(sub, p, base)
			}
		case kSchemaMap, kRegexSchemaMap, kDependencies:
			if mm, ok := sub.(map[string]any); ok {
				for name, s := range mm {
					ix.add(s, p+"/"+escapePointer(name), base)
				}
			}
		}
	}
}

// edges are the schemas n applies to the same value.
func (ix *cycleIndex) edges(n *node) []*node {
	var out []*node
	if ref, ok := n.v["$ref"].(string); ok {
		if t := ix.resolve(n.base, ref); t != nil {
			out = append(out, t)
		}
	}
	if ref, ok := n.v["$dynamicRef"].(string); ok {
		if t := ix.resolve(n.base, ref); t != nil {
			out = append(out, t)
		}
		if i := strings.IndexByte(ref, '#'); i >= 0 {
			out = append(out, ix.dynamic[ref[i+1:]]...)
		}
	}
	// draft-07's dependencies: a schema for a name applies to the same object (a list of names
	// is no schema, and add indexed none for it).
	if deps, ok := n.v["dependencies"].(map[string]any); ok {
		for name := range deps {
			if t := ix.nodes[n.ptr+"/dependencies/"+escapePointer(name)]; t != nil {
				out = append(out, t)
			}
		}
	}
	for k, form := range inPlace {
		sub, ok := n.v[k]
		if !ok {
			continue
		}
		p := n.ptr + "/" + escapePointer(k)
		switch form {
		case kSchema:
			if t := ix.nodes[p]; t != nil {
				out = append(out, t)
			}
		case kSchemaList:
			list, _ := sub.([]any)
			for i := range list {
				if t := ix.nodes[p+"/"+strconv.Itoa(i)]; t != nil {
					out = append(out, t)
				}
			}
		case kSchemaMap:
			mm, _ := sub.(map[string]any)
			for name := range mm {
				if t := ix.nodes[p+"/"+escapePointer(name)]; t != nil {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// resolve is the schema ref names from a schema whose base is base, or nil when it is not in the
// document (the compiler refuses those).
func (ix *cycleIndex) resolve(base *url.URL, ref string) *node {
	u, err := base.Parse(ref)
	if err != nil {
		return nil
	}
	frag := u.Fragment
	u.Fragment = ""
	res := ix.resources[u.String()]
	if res == nil {
		return nil
	}
	if frag == "" {
		return res
	}
	if !strings.HasPrefix(frag, "/") {
		return ix.anchors[u.String()+"#"+frag]
	}
	// A JSON pointer inside the resource: its place in the document.
	ptr := res.ptr
	for _, tok := range strings.Split(frag[1:], "/") {
		ptr += "/" + tok // tokens are already escaped (~0, ~1)
	}
	return ix.nodes[ptr]
}
