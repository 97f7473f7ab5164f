package questions

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/qkit-cli/qkit/internal/termtext"
)

// Everything in a question set, its answers and its status reasons comes from outside qkit (an
// assistant, a person on the web page, another process sharing the store). What is rendered for a
// terminal here passes through termtext first, so control sequences in it are shown, not obeyed;
// the stored set and the JSON keep the text exactly as given.

// term makes text from a set safe for a terminal; termLine keeps it on one line.
func term(s string) string     { return termtext.Visible(s) }
func termLine(s string) string { return termtext.VisibleLine(s) }

// ShownText is a set's text (a question, a reason) as a person is shown it anywhere, not only on a
// terminal: control characters and bidirectional overrides written as visible escapes, exactly as
// `qkit questions show` prints them, so every door shows the same text. ShownLine is the same for
// text that stays on one line (a header, an option's label or description, the source). For display
// only: answers still carry the label exactly as stored.
func ShownText(s string) string { return term(s) }
func ShownLine(s string) string { return termLine(s) }

// ListRow is a set as one row of `qkit questions list`: short id, age, status, number of
// questions, first header.
func ListRow(s *Session, now time.Time) []string {
	return []string{s.ShortID(), s.Age(now), termLine(string(s.Status.Status)),
		strconv.Itoa(len(s.Set().Questions)), termLine(s.Header())}
}

// PrintSession writes a set in full for a person (`qkit questions show`): status, who asked and
// when, every question with its options numbered (as --answer accepts them), and the answers or the
// rejection reason.
func PrintSession(w io.Writer, s *Session, now time.Time) {
	fmt.Fprintf(w, "Question set %s\n", s.ID)
	fmt.Fprintf(w, "Status:  %s", termLine(string(s.Status.Status)))
	if s.Status.Reason != "" {
		fmt.Fprintf(w, " (%s)", term(s.Status.Reason))
	}
	fmt.Fprintln(w)
	from := s.Source()
	if from == "" {
		from = "unknown"
	}
	fmt.Fprintf(w, "Asked:   %s ago by %s (call %s)\n", s.Age(now), termLine(from), termLine(s.Status.CallID))
	if s.Status.Status == Rejected {
		reason := s.Status.RejectionReason
		if reason == "" {
			reason = "no reason given"
		}
		fmt.Fprintf(w, "Rejected: %s\n", term(reason))
	}
	var res *Result
	if s.Status.Status == Completed && s.Answers != nil {
		res = ResultOf(s)
	}
	for i, q := range s.Set().Questions {
		kind := "single choice"
		if q.MultiSelect {
			kind = "multiple choice"
		}
		fmt.Fprintf(w, "\n%d. [%s] %s (%s)\n", i+1, termLine(q.Header), term(q.Question), kind)
		for j, o := range q.Options {
			fmt.Fprintf(w, "   %d) %s\n", j+1, optionText(o))
		}
		if res != nil {
			aq := res.Answers[i]
			for _, l := range aq.Selected {
				fmt.Fprintf(w, "   → %s\n", termLine(l))
			}
			if aq.Other != "" {
				fmt.Fprintf(w, "   → Other: %s\n", term(strconv.Quote(aq.Other)))
			}
			if len(aq.Selected) == 0 && aq.Other == "" {
				fmt.Fprintln(w, "   → (no selection)")
			}
		}
	}
}

// optionText is an option on one line: its label, then its description.
func optionText(o Option) string {
	if o.Description == "" {
		return termLine(o.Label)
	}
	return termLine(o.Label) + " — " + termLine(o.Description)
}
