package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// AuditRecord is one line of <state>/audit.log.
type AuditRecord struct {
	Time        time.Time `json:"time"`
	Source      string    `json:"source"`
	CommandLine string    `json:"command_line"`
	// Dir is the folder the command ran in when it was not qkit's own (an ACP session's), so a
	// relative path in CommandLine can be told apart.
	Dir    string `json:"dir,omitempty"`
	Access Access `json:"access"`
	// Confirmed is set when the user confirmed a change; Trusted when internal.trusted waived it.
	Confirmed bool `json:"confirmed"`
	Trusted   bool `json:"trusted,omitempty"`
	// Declined is set when the user said no; the command did not run and ExitCode is 3.
	Declined bool `json:"declined,omitempty"`
	// Interrupted is set when the question was cancelled before the user answered (Ctrl-C at the
	// CLI, session/cancel or a cancelled permission request in ACP, a cancelled MCP elicitation);
	// the command did not run and ExitCode is 130.
	Interrupted bool    `json:"interrupted,omitempty"`
	ExitCode    int     `json:"exit_code"`
	DurationMS  float64 `json:"duration_ms"`
}

// audit writes the line for a call and returns a warning for the command's stderr when it could not.
// interrupted says the question was cancelled before an answer.
func (r *Registry) audit(opts RunOptions, c *Call, res Result, start time.Time, interrupted bool) string {
	if r.opts.AuditPath == "" {
		return ""
	}
	rec := AuditRecord{
		Time: start.UTC(), Source: opts.Source, CommandLine: c.CommandLine, Dir: opts.Dir, Access: c.Access,
		Confirmed: res.Confirmed, Trusted: c.Trusted, Declined: c.NeedsConfirmation && !res.Confirmed && !interrupted,
		Interrupted: interrupted,
		ExitCode:    res.ExitCode, DurationMS: float64(r.opts.Now().Sub(start).Microseconds()) / 1000,
	}
	if err := AppendAudit(r.opts.AuditPath, rec); err != nil {
		// The command has run; failing it now would lie about what happened. Say so on its stderr.
		return fmt.Sprintf("qkit: warning: %v\n", err)
	}
	return ""
}

// AppendAudit appends one record to the audit log at path, under the file's lock so concurrent
// processes never interleave lines. The directory is 0700 and the file 0600.
func AppendAudit(path string, rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	lock, err := filestore.LockFor(path, 0o700)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer lock.Unlock()
	f, err := filestore.OpenNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	return nil
}

// ReadAudit returns the records of the audit log at path (for tests and tools).
func ReadAudit(path string) ([]AuditRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []AuditRecord
	for i, line := range splitLines(data) {
		var rec AuditRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("audit log %s line %d: %w", path, i+1, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}
