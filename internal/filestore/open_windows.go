//go:build windows

package filestore

import "os"

// OpenNoFollow opens name like os.OpenFile. Windows has no O_NOFOLLOW; creating a symbolic link
// there takes a privilege an attacker planting one would already need.
func OpenNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// OpenRegular opens name for reading only when it is a regular file.
func OpenRegular(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return checkRegular(f)
}
