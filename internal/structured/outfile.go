package structured

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// CheckOutputFile checks, before anything runs, that path can be written later: its directory
// exists and is a directory, and path itself is not a directory.
func CheckOutputFile(path string) error {
	if path == "" {
		return fmt.Errorf("empty output file name")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("output file %s: its directory %s does not exist", path, dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("output file %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("output file %s is a directory", path)
	}
	return nil
}

// WriteOutputFile writes data to path atomically: a temporary file in the same directory,
// fsync, rename. A failure leaves whatever was at path untouched. The directory is not created
// (CheckOutputFile said it exists).
func WriteOutputFile(path string, data []byte) error {
	if err := CheckOutputFile(path); err != nil {
		return err
	}
	return filestore.WriteAtomic(path, data, 0o644, 0o755)
}
