package contextfiles

import (
	"fmt"
	"os"
	"strings"
)

// pseudoWarning is the warning for a folder on a pseudo file system, which no walk enters: /proc
// and /sys hold endless trees of generated files (some that block a reader, some that never end),
// and nothing in them is context.
func pseudoWarning(dir, kind string, rules []string) string {
	return fmt.Sprintf("skipping %s: it is a %s file system, which qkit never reads for context (%s)", dir, kind, ruleList(rules))
}

// ruleList names rules in a message: rule 'a', or rules 'a', 'b'.
func ruleList(rules []string) string {
	quoted := make([]string, len(rules))
	for i, r := range rules {
		quoted[i] = "'" + r + "'"
	}
	if len(quoted) == 1 {
		return "rule " + quoted[0]
	}
	return "rules " + strings.Join(quoted, ", ")
}

// mountinfoPath is where Linux lists the mounts a process sees.
const mountinfoPath = "/proc/self/mountinfo"

// maxMountinfo bounds the read of mountinfoPath (a machine with many containers lists thousands of
// mounts, at about 150 bytes each).
const maxMountinfo = 8 << 20

// mountTable maps a device, as "major:minor", to the type of the file system mounted from it. It
// is read from mountinfoPath the first time it is needed (only for a folder that statfs calls a
// tmpfs, since a devtmpfs says it is one), at most once per expansion of the rules.
type mountTable struct {
	read  bool
	types map[string]string
}

// typeOf is the type of the file system on device majmin, or "" when unknown.
func (m *mountTable) typeOf(majmin string) string {
	if !m.read {
		m.read = true
		if f, err := os.Open(mountinfoPath); err == nil {
			buf := make([]byte, maxMountinfo)
			n, _ := readFull(f, buf)
			_ = f.Close()
			m.types = parseMountinfo(buf[:n])
		}
	}
	return m.types[majmin]
}

// readFull reads into buf until it is full or the reader ends.
func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := f.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// parseMountinfo reads the lines of /proc/self/mountinfo: "36 35 98:0 /root /mnt opts [optional
// fields] - fstype source super-options". It returns the file system type of each device; a line
// that is not of that shape is ignored, and a device mounted twice keeps its last line.
func parseMountinfo(data []byte) map[string]string {
	types := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		// Six fields come before the optional ones; the first "-" after them ends those.
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || !strings.Contains(fields[2], ":") {
			continue
		}
		types[fields[2]] = fields[sep+1]
	}
	return types
}
