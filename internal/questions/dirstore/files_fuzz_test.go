package dirstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
)

// FuzzSessionFiles writes arbitrary request.json, status.json and answers.json into a set's folder,
// as another tool (or a broken disk) could, and may put something that is not a regular file (a FIFO,
// a link to /dev/zero) or a file over the size limit in one's place (special; see plantSpecial):
// reading it never panics nor blocks, and a set that reads is in one of the known states, with
// answers only when completed.
func FuzzSessionFiles(f *testing.F) {
	f.Add(``, ``, ``, uint8(1))
	f.Add(``, ``, ``, uint8(2))
	f.Add(``, ``, ``, uint8(3))
	f.Add(``, `{"status":"completed"}`, ``, uint8(7))
	f.Add(``, `{"status":"completed"}`, `{"answers":[{"questionIndex":0,"selected":["Go"]},{"questionIndex":1,"selected":[]}]}`, uint8(0))
	f.Add(`{"sessionId":`, ``, ``, uint8(0))
	f.Add(``, `{"status":"frozen","claim":{"by":{"pid":-1}}}`, `[]`, uint8(0))
	f.Add(`{"questions":[]}`, `{"status":"pending","detached":true,"waiter":{"pid":1}}`, `{"answers":null}`, uint8(0))
	f.Add(``, `null`, `{"answers":[{"questionIndex":9,"selected":["x"]}]}`, uint8(0))
	known := map[questions.State]bool{questions.Pending: true, questions.Detached: true, questions.InProgress: true, questions.Completed: true, questions.Rejected: true, questions.TimedOut: true, questions.Abandoned: true}
	f.Fuzz(func(t *testing.T, request, status, answers string, special uint8) {
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
		plantSpecial(t, dir, special)
		var got *questions.Session
		var err error
		notBlocked(t, "Get", func() { got, err = s.Get(sess.ID) })
		if err != nil {
			return
		}
		if !known[got.Status.Status] {
			t.Fatalf("read as %q", got.Status.Status)
		}
		if got.Status.Status == questions.Completed && got.Request != nil {
			_ = questions.ResultOf(got).Text()
		}
		notBlocked(t, "List", func() {
			if _, err := s.List(); err != nil {
				t.Errorf("list: %v", err)
			}
		})
	})
}
