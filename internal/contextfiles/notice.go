package contextfiles

import "strings"

// Notice is the context files' warnings (Report.Warnings, Store.Prompt's, made printable
// already) as a person is shown them at every door: a "qkit: warning: " line each, as ask prints
// them on stderr; "" for none. acp serve sends it to the editor as qkit's own notice, which the
// transcript does not keep.
func Notice(warnings []string) string {
	var b strings.Builder
	for _, w := range warnings {
		b.WriteString("qkit: warning: " + w + "\n")
	}
	return b.String()
}
