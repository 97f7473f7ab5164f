package questions

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzSessionFiles writes arbitrary request.json, status.json and answers.json into a set's folder,
// as another tool (or a broken disk) could: reading it never panics, and a set that reads is in one
// of the known states, with answers only when completed.
func FuzzSessionFiles(f *testing.F) {
	f.Add(``, `{"status":"completed"}`, `{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[]}]}`)
	f.Add(`{"sessionId":`, ``, ``)
	f.Add(``, `{"status":"frozen","claim":{"by":{"pid":-1}}}`, `[]`)
	f.Add(`{"questions":[]}`, `{"status":"pending","detached":true,"waiter":{"pid":1}}`, `{"answers":null}`)
	f.Add(``, `null`, `{"answers":[{"questionIndex":9,"selected":["x"]}]}`)
	known := map[State]bool{Pending: true, Detached: true, InProgress: true, Completed: true, Rejected: true, TimedOut: true, Abandoned: true}
	f.Fuzz(func(t *testing.T, request, status, answers string) {
		s := newStore(t)
		sess := create(t, s)
		dir := filepath.Join(s.Dir(), sess.ID)
		for name, data := range map[string]string{RequestFile: request, StatusFile: status, AnswersFile: answers} {
			if data == "" {
				continue // the file as Create wrote it (none for answers.json)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Get(sess.ID)
		if err != nil {
			return
		}
		if !known[got.Status.Status] {
			t.Fatalf("read as %q", got.Status.Status)
		}
		if got.Status.Status == Completed && got.Request != nil {
			_ = ResultOf(got).Text()
		}
		if _, err := s.List(); err != nil {
			t.Fatalf("list: %v", err)
		}
	})
}
