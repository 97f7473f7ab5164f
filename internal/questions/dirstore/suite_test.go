package dirstore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// TestStoreSuite runs the one store suite on the file store; "machines" are two stores on the same
// folder.
func TestStoreSuite(t *testing.T) { storetest.Run(t, fileBackend) }

func fileBackend(t *testing.T) *storetest.Backend {
	dir := filepath.Join(t.TempDir(), "questions")
	return &storetest.Backend{
		Name: "file",
		Open: func(t *testing.T, opts questions.Options) questions.Store {
			s, err := New(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		SetOwner: func(t *testing.T, id string, p questions.Process) {
			rewrite(t, filepath.Join(dir, id, RequestFile), func(m map[string]any) { m["owner"] = p })
		},
		SetClaimer: func(t *testing.T, id string, p questions.Process) {
			rewrite(t, filepath.Join(dir, id, StatusFile), func(m map[string]any) {
				m["claim"].(map[string]any)["by"] = p
			})
		},
		EditAnswers: func(t *testing.T, id string, edit func(a *questions.Answers)) {
			path := filepath.Join(dir, id, AnswersFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var a questions.Answers
			if err := json.Unmarshal(data, &a); err != nil {
				t.Fatal(err)
			}
			edit(&a)
			data, _ = json.Marshal(a)
			writeFile(t, path, string(data))
		},
		Remove: func(t *testing.T, id string) {
			// As a careful tool removes a set: out of sight at once, then deleted.
			gone := filepath.Join(dir, ".gone-"+id)
			if err := os.Rename(filepath.Join(dir, id), gone); err != nil {
				t.Error(err)
			}
			_ = os.RemoveAll(gone)
		},
	}
}
