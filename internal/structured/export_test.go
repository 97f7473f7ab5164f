package structured

// What the external tests (which compile schemas with internal/structured/schema, which imports
// this package) reach of the quick check.

// QuickCheck is quickCheck with s's quick schema (nil s: the reader alone).
func QuickCheck(s *Schema, doc string) bool {
	if s == nil {
		return quickCheck(nil, doc)
	}
	return quickCheck(s.quick, doc)
}

// HasQuick reports whether s has a quick check.
func HasQuick(s *Schema) bool { return s.quick != nil }

// CompilesQuick reports whether the schema text src gets a quick check.
func CompilesQuick(src []byte) bool { return compileQuick(src) != nil }

// ValidJSON is validJSON.
func ValidJSON(doc string) bool { return validJSON(doc) }

// Full is s's validator alone.
func Full(s *Schema) Validator { return s.compiled }

// Explain is explain with s's schema: the first problem of v, or "".
func Explain(s *Schema, v any) string { return explain(s.tree, s.draft07, v) }

// CountValues is countValues.
func CountValues(v any) int { return countValues(v) }
