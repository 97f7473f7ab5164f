//go:build linux

package contextfiles

import (
	"fmt"
	"os"
	"syscall"
)

// pseudoMagic names the pseudo file systems by the magic number statfs gives (linux/magic.h).
var pseudoMagic = map[uint32]string{
	0x9fa0:     "proc",
	0x62656572: "sysfs",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x27e0eb:   "cgroup",
	0x63677270: "cgroup2",
	0x73636673: "securityfs",
	0x1cd1:     "devpts",
	0xcafe4a11: "bpf",
	0x6165676c: "pstore",
	0xde5e81e4: "efivarfs",
	0x62656570: "configfs",
	0x65735543: "fusectl",
	0xf97cff8c: "selinuxfs",
	0x42494e4d: "binfmt_misc",
	0x6e736673: "nsfs",
	0x19800202: "mqueue",
}

// tmpfsMagic is what statfs says for a tmpfs, and for a devtmpfs (/dev) too.
const tmpfsMagic = 0x01021994

// pseudoFS names the pseudo file system the open folder f lies on ("proc", "sysfs", "devtmpfs",
// ...), or "" for any other. It asks statfs; a tmpfs is looked up in the mount table, because
// devtmpfs gives tmpfs's magic number.
func pseudoFS(f *os.File, _ string, mounts *mountTable) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return ""
	}
	magic := uint32(st.Type) // the magic numbers are 32 bits; Type's width varies by architecture
	if kind, ok := pseudoMagic[magic]; ok {
		return kind
	}
	if magic != tmpfsMagic {
		return ""
	}
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if kind := mounts.typeOf(devName(uint64(sys.Dev))); kind == "devtmpfs" { // Dev is 32 bits on some architectures
		return kind
	}
	return ""
}

// devName is a Linux device number as mountinfo writes it: "major:minor".
func devName(dev uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	return fmt.Sprintf("%d:%d", major, minor)
}
