// Package storetest is the one suite of store semantics (the ones questions.Store states), run by
// every store's own tests: the file store (dirstore) and the NATS store (natsstore). Each store's
// test gives a Backend that opens stores of its kind on shared sets and reaches behind a store's back
// the way another tool, machine or retention sweep would.
package storetest

import (
	"runtime"
	"testing"

	"github.com/qkit-cli/qkit/internal/questions"
)

// Backend opens stores of one kind that share their sets.
type Backend struct {
	Name string
	// Open opens another store on the same sets (another process or machine).
	Open func(t *testing.T, opts questions.Options) questions.Store
	// SetOwner records p as the process that asked the set.
	SetOwner func(t *testing.T, id string, p questions.Process)
	// SetClaimer makes p the holder of the set's claim.
	SetClaimer func(t *testing.T, id string, p questions.Process)
	// Remove deletes the set outright.
	Remove func(t *testing.T, id string)
	// EditAnswers changes the stored answers of an answered set, as another tool sharing the store
	// could, without any check.
	EditAnswers func(t *testing.T, id string, edit func(a *questions.Answers))
}

// Run runs the suite, each test as a subtest on a fresh backend from newBackend; they run in
// parallel (the serial ones first, alone), so each backend must have sets of its own.
func Run(t *testing.T, newBackend func(t *testing.T) *Backend) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.serial {
				t.Parallel() // each on a backend of its own; most of them wait on a store
			}
			if tc.name == "WaitPendingWatchesTheClaimersExit" && runtime.GOOS != "linux" {
				t.Skip("a terminal's exit is watched on Linux (pidfd) only")
			}
			tc.test(t, newBackend(t))
		})
	}
}

// LangSet is a valid set of two questions.
const LangSet = `{"questions":[
 {"question":"Which language should we use?","header":"Language","options":[{"label":"Go","description":"static binary"},{"label":"TypeScript","description":"node runtime"}]},
 {"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Lint"},{"label":"Docs"},{"label":"CI, nightly"}]}
]}`

// GoodAnswers answer LangSet.
var GoodAnswers = []questions.Answer{{QuestionIndex: 0, Selected: []string{"Go"}}, {QuestionIndex: 1, Selected: []string{"Lint", "Docs"}}}

// MustSet parses a question set or fails the test.
func MustSet(t testing.TB, s string) *questions.QuestionSet {
	t.Helper()
	set, err := questions.ParseQuestionSet([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return set
}
