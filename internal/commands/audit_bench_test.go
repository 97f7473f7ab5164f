package commands

import (
	"path/filepath"
	"testing"
)

func BenchmarkAppendAudit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state", "audit.log")
	for b.Loop() {
		if err := AppendAudit(path, AuditRecord{Source: "cli", CommandLine: "qkit context show --json", Access: Read}); err != nil {
			b.Fatal(err)
		}
	}
}
