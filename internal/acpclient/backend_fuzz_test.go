package acpclient

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzBackendCache: whatever the backend cache holds, reading it gives only entries qkit could
// have written (an absolute path, acp or chat), so a damaged one is probed again instead of
// trusted; and recording a probe rewrites any cache into a valid one that holds it.
func FuzzBackendCache(f *testing.F) {
	f.Add([]byte(`[{"path":"/usr/local/bin/kiro-cli","size":123,"mod_time":"2026-01-02T03:04:05Z","backend":"acp","probed_at":"2026-01-02T03:04:06Z"}]`))
	f.Add([]byte(`[{"path":"/usr/bin/q","size":1,"mod_time":"2026-01-02T03:04:05Z","backend":"chat"},{"path":"/usr/bin/q","backend":"acp"}]`))
	f.Add([]byte(`[{"path":"/usr/bin/q","backend":"auto"},{"path":"q","backend":"acp"},{"backend":"chat"}]`))
	f.Add([]byte(`[{"path":"/usr/bin/q","backend":"acp"},7]`))
	f.Add([]byte(`{"path":"/usr/bin/q"}`))
	f.Add([]byte("[{\"path\":\"/usr/bin/q\",\"mod_time\":\"yesterday\"}]"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "agent-backend.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for path, e := range readBackendCache(file) {
			if path != e.Path || !e.valid() {
				t.Fatalf("trusted %q: %+v from %q", path, e, data)
			}
		}
		probe := backendEntry{Path: "/opt/kiro/bin/kiro-cli", Size: 42, ModTime: time.Unix(1700000000, 0).UTC(), Backend: BackendACP, ProbedAt: time.Unix(1700000100, 0).UTC()}
		if err := writeBackendCache(file, probe); err != nil {
			t.Fatalf("writing over %q: %v", data, err)
		}
		raw, _ := os.ReadFile(file)
		var entries []backendEntry
		if err := json.Unmarshal(raw, &entries); err != nil {
			t.Fatalf("the rewritten cache is damaged: %v: %s", err, raw)
		}
		for _, e := range entries {
			if !e.valid() {
				t.Fatalf("the rewritten cache keeps %+v: %s", e, raw)
			}
		}
		got := readBackendCache(file)[probe.Path]
		if got.Backend != probe.Backend || got.Size != probe.Size || !got.ModTime.Equal(probe.ModTime) {
			t.Fatalf("the probe read back as %+v from %s", got, raw)
		}
	})
}

// FuzzSessions: whatever the remembered-sessions file holds, Sessions and LastSession give only
// what RememberSession could have written (an absolute folder, an id without spaces or control
// characters, fit for a --session completion line), nothing from a damaged file; and
// remembering a session rewrites any file into one that gives it back.
func FuzzSessions(f *testing.F) {
	f.Add([]byte(`{"/home/dev/project":"0b6f3a52-2f0e-4c7e-9d1a-5c2b8e7f9a10","/tmp/x":"sess_1"}`))
	f.Add([]byte(`{"/home/dev/project":"a\tb","relative":"s1","/tmp/y":""}`))
	f.Add([]byte(`{"/home/dev/project":"s1","/tmp/z":7}`))
	f.Add([]byte(`{"/home/dev/pro\nject":"s1","/tmp/w":"s\u001b[2J"}`))
	f.Add([]byte(`["/home/dev/project"]`))
	f.Add([]byte(`{"/home/dev/project":"s1"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		state := t.TempDir()
		file := filepath.Join(state, "acp-sessions.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var whole map[string]string
		damaged := json.Unmarshal(data, &whole) != nil
		got := Sessions(file)
		if damaged && len(got) != 0 {
			t.Fatalf("a damaged file gave %q: %q", got, data)
		}
		for dir, id := range got {
			if !filepath.IsAbs(dir) || id == "" || strings.ContainsAny(id, " \t\r\n") || strings.ContainsAny(dir, "\t\r\n") {
				t.Fatalf("Sessions gave %q -> %q from %q", dir, id, data)
			}
			if LastSession(file, dir) != id {
				t.Fatalf("LastSession(%q) = %q, Sessions says %q", dir, LastSession(file, dir), id)
			}
		}
		dir, id := filepath.Join(state, "project"), "0b6f3a52-2f0e-4c7e-9d1a-5c2b8e7f9a10"
		if err := RememberSession(file, dir, id); err != nil {
			t.Fatalf("remembering over %q: %v", data, err)
		}
		if got := LastSession(file, dir); got != id {
			t.Fatalf("LastSession after RememberSession over %q = %q", data, got)
		}
	})
}
