package schema

import (
	"regexp"
	"strconv"
)

// What checking an answer costs. The validator follows every branch of anyOf and oneOf (and
// allOf, if, not...) on the same value, and a branch that goes back to the schema through $ref
// for a part of the value does it again one level down: two recursive branches cost 2^depth, and
// an answer nested 20 deep held a core for a minute (anyOf's failure message alone reached 450 MB).
// A chain of allOf:[{$ref:next},{$ref:next}] doubles the work on one value at each link, with no
// answer needed at all. A step is one application of a part of the schema to a part of the value:
// the unit both the validator and explain walk in. Counting the steps of a whole check does not
// walk each one: the schemas applied to a value are gathered with how many times each applies,
// then passed on to the value's parts, so the count takes one pass over the answer per schema
// part that reaches it, whatever the total.

// closure is what applying the schemas of applied (each a number of times) to one value costs:
// the schemas reached in place ($ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas),
// in an order where a schema comes before those it reaches, with how many times each applies,
// counted up to limit+1. The in-place graph has no loop (checkCycles refuses one).
func (ix *cycleIndex) closure(applied map[*node]int, limit int) (order []*node, times map[*node]int) {
	seen := map[*node]bool{}
	var post []*node
	var visit func(n *node)
	visit = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, t := range ix.inPlace[n] {
			visit(t)
		}
		post = append(post, n)
	}
	for n := range applied {
		visit(n)
	}
	times = make(map[*node]int, len(post))
	for n, k := range applied {
		times[n] = k
	}
	for i := len(post) - 1; i >= 0; i-- {
		n := post[i]
		order = append(order, n)
		for _, t := range ix.inPlace[n] {
			times[t] = capAdd(times[t], times[n], limit)
		}
	}
	return order, times
}

func capAdd(a, b, limit int) int {
	if a+b > limit {
		return limit + 1
	}
	return a + b
}

// maxOneValue bounds how many times a schema may apply its parts to one value, whatever the
// answer. A real schema applies a few dozen (a union of 50 object types under anyOf, each with
// an allOf of two, applies about 150); 1<<16 leaves room for far larger ones, and is reached only
// by a schema that multiplies its branches (16 links of allOf:[{$ref},{$ref}]).
const maxOneValue = 1 << 16

// checkCost refuses a schema that applies its parts to one value more than maxOneValue times.
func (ix *cycleIndex) checkCost() error {
	for _, k := range sortedNodeKeys(ix.nodes) {
		n := ix.nodes[k]
		_, times := ix.closure(map[*node]int{n: 1}, maxOneValue)
		total := 0
		for _, t := range times {
			total = capAdd(total, t, maxOneValue)
		}
		if total > maxOneValue {
			return &ShapeError{Pointer: n.ptr, Message: "the schema applies its parts to one value more than " +
				strconv.Itoa(maxOneValue) + " times here (allOf, anyOf, oneOf or $ref reaching the same schemas again and again): checking an answer would take too long"}
		}
	}
	return nil
}

// costWalk counts the steps of checking one answer.
type costWalk struct {
	ix       *cycleIndex
	limit    int
	steps    int
	patterns map[string]*regexp.Regexp
}

// steps is how many steps checking v against the schema takes, counted up to limit+1.
func (ix *cycleIndex) steps(v any, limit int) int {
	w := &costWalk{ix: ix, limit: limit, patterns: map[string]*regexp.Regexp{}}
	w.value(map[*node]int{ix.nodes[""]: 1}, v)
	return w.steps
}

// value adds the steps of applying the schemas of applied (each a number of times) to v and its
// parts; it stops once the count passes the limit.
func (w *costWalk) value(applied map[*node]int, v any) {
	order, times := w.ix.closure(applied, w.limit)
	for _, n := range order {
		w.steps = capAdd(w.steps, times[n], w.limit)
	}
	if w.steps > w.limit {
		return
	}
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			next := map[*node]int{}
			for _, n := range order {
				for _, t := range w.itemSchemas(n, i) {
					next[t] = capAdd(next[t], times[n], w.limit)
				}
			}
			if w.descend(next, item) {
				return
			}
		}
	case map[string]any:
		for name, val := range v {
			next, names := map[*node]int{}, map[*node]int{}
			for _, n := range order {
				for _, t := range w.propertySchemas(n, name) {
					next[t] = capAdd(next[t], times[n], w.limit)
				}
				if t := w.ix.nodes[n.ptr+"/propertyNames"]; t != nil {
					names[t] = capAdd(names[t], times[n], w.limit)
				}
			}
			if w.descend(names, name) || w.descend(next, val) {
				return
			}
		}
	}
}

// descend walks v with the schemas applied to it, if any; it tells whether the limit is passed.
func (w *costWalk) descend(applied map[*node]int, v any) bool {
	if len(applied) > 0 {
		w.value(applied, v)
	}
	return w.steps > w.limit
}

// itemSchemas are the schemas n applies to item i of an array: more than the validator may
// (items and additionalItems of both drafts, contains, unevaluatedItems unless items covers every
// item), never fewer.
func (w *costWalk) itemSchemas(n *node, i int) []*node {
	var out []*node
	add := func(p string) {
		if t := w.ix.nodes[p]; t != nil {
			out = append(out, t)
		}
	}
	idx := strconv.Itoa(i)
	add(n.ptr + "/prefixItems/" + idx)
	_, itemsList := n.v["items"].([]any)
	if itemsList {
		add(n.ptr + "/items/" + idx)
	} else {
		add(n.ptr + "/items")
	}
	add(n.ptr + "/additionalItems")
	add(n.ptr + "/contains")
	if _, all := n.v["items"]; !all || itemsList {
		add(n.ptr + "/unevaluatedItems")
	}
	return out
}

// propertySchemas are the schemas n applies to the property name of an object: properties and
// the patternProperties whose pattern matches, else additionalProperties, else
// unevaluatedProperties (which the validator skips when a schema beside n evaluated the name: one
// more, never fewer).
func (w *costWalk) propertySchemas(n *node, name string) []*node {
	var out []*node
	if t := w.ix.nodes[n.ptr+"/properties/"+escapePointer(name)]; t != nil {
		out = append(out, t)
	}
	if pats, ok := n.v["patternProperties"].(map[string]any); ok {
		for pat := range pats {
			re, ok := w.patterns[pat]
			if !ok {
				re, _ = regexp.Compile(pat) // checked at compile time; a nil one counts as matching
				w.patterns[pat] = re
			}
			if re == nil || re.MatchString(name) {
				if t := w.ix.nodes[n.ptr+"/patternProperties/"+escapePointer(pat)]; t != nil {
					out = append(out, t)
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if t := w.ix.nodes[n.ptr+"/additionalProperties"]; t != nil {
		return append(out, t)
	}
	if t := w.ix.nodes[n.ptr+"/unevaluatedProperties"]; t != nil {
		out = append(out, t)
	}
	return out
}
