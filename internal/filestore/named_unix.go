//go:build unix

package filestore

import (
	"fmt"
	"os"
	"syscall"
)

// descriptorOpen says whether descriptor fd of this process is open, for path, which names it.
func descriptorOpen(path string, fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fmt.Errorf("output file %s: descriptor %d is not open", path, fd)
	}
	return nil
}

// writeDescriptor writes data to descriptor fd of this process, through a copy of it: the
// descriptor itself stays open (an *os.File made from it would close it when collected).
func writeDescriptor(path string, fd int, data []byte) error {
	dup, err := syscall.Dup(fd)
	if err != nil {
		return fmt.Errorf("write %s: descriptor %d is not open", path, fd)
	}
	f := os.NewFile(uintptr(dup), path)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
