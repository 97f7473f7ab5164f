package structured

import (
	"github.com/qkit-cli/qkit/internal/filestore"
)

// CheckOutputFile checks, before anything runs, that path can be written later: its directory
// exists, and path is neither a directory nor a link to nothing (filestore.CheckNamed).
func CheckOutputFile(path string) error {
	return filestore.CheckNamed(path)
}

// WriteOutputFile writes data to path as filestore.WriteNamed does: a regular file is replaced
// atomically (a failure leaves it untouched) and keeps its permissions, a new one is created as a
// shell's > would (0666 less the umask), and a device, a FIFO or /dev/stdout is written, not
// replaced. The directory is not created (CheckOutputFile said it exists).
func WriteOutputFile(path string, data []byte) error {
	return filestore.WriteNamed(path, data, 0o666)
}
