//go:build windows

package filestore

import "fmt"

// Windows has no /dev/fd: ownDescriptor never names one there.

func descriptorOpen(path string, fd int) error {
	return fmt.Errorf("output file %s: descriptor %d cannot be named on Windows", path, fd)
}

func writeDescriptor(path string, fd int, _ []byte) error { return descriptorOpen(path, fd) }
