package natsstore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// TestStoreSuite runs the one store suite on a NATS bucket on a real NATS server (a process,
// internal/natstest); "machines" are two stores on the same bucket.
func TestStoreSuite(t *testing.T) { storetest.Run(t, natsBackend) }

func natsBackend(t *testing.T) *storetest.Backend {
	srv := startNATS(t)
	inst := "t" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	var admin *Store
	adminStore := func(t *testing.T) *Store {
		if admin == nil {
			admin = openNATS(t, srv, inst, questions.Options{})
		}
		return admin
	}
	// edit rewrites the set's record as another machine's client would.
	edit := func(t *testing.T, id string, fn func(rec *record)) {
		a := adminStore(t)
		ctx, cancel := a.ctx()
		defer cancel()
		e, err := a.kv.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var rec record
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			t.Fatal(err)
		}
		fn(&rec)
		data, _ := json.Marshal(rec)
		if _, err := a.kv.Update(ctx, id, data, e.Revision()); err != nil {
			t.Fatal(err)
		}
	}
	return &storetest.Backend{
		Name: "nats",
		Open: func(t *testing.T, opts questions.Options) questions.Store { return openNATS(t, srv, inst, opts) },
		SetOwner: func(t *testing.T, id string, p questions.Process) {
			edit(t, id, func(rec *record) { rec.Request.Owner = p })
		},
		SetClaimer: func(t *testing.T, id string, p questions.Process) {
			edit(t, id, func(rec *record) { rec.Status.Claim.By = p })
		},
		EditAnswers: func(t *testing.T, id string, fn func(a *questions.Answers)) {
			edit(t, id, func(rec *record) { fn(rec.Answers) })
		},
		Remove: func(t *testing.T, id string) {
			a := adminStore(t)
			ctx, cancel := a.ctx()
			defer cancel()
			if err := a.kv.Purge(ctx, id); err != nil {
				t.Error(err)
			}
		},
	}
}
