package contextfiles

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/config"
)

// TestWalkLimitsMatchTheSettings: the defaults used without settings are the settings' defaults.
func TestWalkLimitsMatchTheSettings(t *testing.T) {
	files, ok := config.LookupKey(SettingWalkMaxFiles)
	if !ok || files.Default != fmt.Sprint(DefaultWalkMaxFiles) {
		t.Errorf("%s: %+v, want default %d", SettingWalkMaxFiles, files, DefaultWalkMaxFiles)
	}
	timeout, ok := config.LookupKey(SettingWalkTimeout)
	if !ok {
		t.Fatalf("no setting %s", SettingWalkTimeout)
	}
	if d, err := config.ParseDuration(timeout.Default); err != nil || d != DefaultWalkTimeout {
		t.Errorf("%s: default %q, want %s", SettingWalkTimeout, timeout.Default, DefaultWalkTimeout)
	}
}

// TestWalkStopsAtTheFileLimit: a walk that looks at more files and folders than the limit stops,
// and every rule of it takes nothing, with a warning naming the rule and the setting. A rule named
// exactly, or a walk under the limit, is not affected; add says why a glob found nothing.
func TestWalkStopsAtTheFileLimit(t *testing.T) {
	s, cwd := newTestStore(t)
	tree(t, cwd, "a/1.md", "a/2.md", "a/3.md", "b/x.md", "top.md")
	s = s.WithWalkLimits(WalkLimits{MaxFiles: 4})
	ex := expandRules(t, s, cwd, "**/*.md", "a/*.md", "b/*.md", "top.md")
	if got, want := paths(ex), []string{filepath.Join(cwd, "top.md")}; !reflect.DeepEqual(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	want := []string{
		"skipping rule '**/*.md': its walk looked at more than 4 files and folders, the limit (setting context.walk_max_files); it takes no file. Narrow the rule, or raise the setting",
		"skipping rule 'a/*.md': its walk looked at more than 4 files and folders, the limit (setting context.walk_max_files); it takes no file. Narrow the rule, or raise the setting",
		"skipping rule 'b/*.md': its walk looked at more than 4 files and folders, the limit (setting context.walk_max_files); it takes no file. Narrow the rule, or raise the setting",
	}
	if !reflect.DeepEqual(ex.warnings, want) {
		t.Errorf("warnings\n got %q\nwant %q", ex.warnings, want)
	}
	// Alone, b/*.md's walk (its folder and one file) is under the limit.
	if ex := expandRules(t, s, cwd, "b/*.md"); len(ex.files) != 1 || len(ex.warnings) != 0 {
		t.Errorf("b/*.md: %+v", ex)
	}
	_, err := s.Add(context.Background(), Target{Profile: DefaultProfile}, []string{"**/*.txt"}, AddOptions{Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), "No files found matching glob pattern '"+filepath.Join(cwd, "**/*.txt")+
		"' (its walk looked at more than 4 files and folders, the limit (setting context.walk_max_files))") {
		t.Errorf("Add = %v", err)
	}
}

// TestWalkStopsAtTheTimeLimit: the clock is read as the walk goes; once past the limit, the walk
// stops and its rules take nothing. The clock here is a counter, so no test waits.
func TestWalkStopsAtTheTimeLimit(t *testing.T) {
	s, cwd := newTestStore(t)
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(cwd, fmt.Sprintf("d%02d", i), "x.md"), "x")
	}
	s = s.WithWalkLimits(WalkLimits{Timeout: 5 * time.Second})
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	reads := 0
	s.now = func() time.Time { reads++; return start.Add(time.Duration(reads) * time.Second) }
	ex := expandRules(t, s, cwd, "**/*.md")
	want := []string{"skipping rule '**/*.md': its walk took longer than 5s, the limit (setting context.walk_timeout); it takes no file. Narrow the rule, or raise the setting"}
	if len(ex.files) != 0 || !reflect.DeepEqual(ex.warnings, want) {
		t.Errorf("files %q, warnings %q", paths(ex), ex.warnings)
	}
	if reads > 8 {
		t.Errorf("the walk went on after its time was up: the clock was read %d times", reads)
	}
	// With a clock that stands still, the same walk ends.
	s.now = func() time.Time { return start }
	if ex := expandRules(t, s, cwd, "**/*.md"); len(ex.files) != 20 || len(ex.warnings) != 0 {
		t.Errorf("files %d, warnings %q", len(ex.files), ex.warnings)
	}
}

// TestParseMountinfo reads the kernel's lines, with and without optional fields, and ignores junk.
func TestParseMountinfo(t *testing.T) {
	data := "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
		"24 27 0:6 / /dev rw,relatime shared:2 - devtmpfs devtmpfs rw,size=1k\n" +
		"25 24 0:23 / /dev/shm rw master:1 shared:3 - tmpfs tmpfs rw\n" +
		"junk\n1 2 3 4 5 6 - \n\n"
	want := map[string]string{"0:21": "proc", "0:6": "devtmpfs", "0:23": "tmpfs"}
	if got := parseMountinfo([]byte(data)); !reflect.DeepEqual(got, want) {
		t.Errorf("parseMountinfo = %v, want %v", got, want)
	}
}
