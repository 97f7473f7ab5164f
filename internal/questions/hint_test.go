package questions

import (
	"testing"
)

func TestAnswerHint(t *testing.T) {
	for _, tc := range []struct {
		form bool
		page string
		want string
	}{
		{false, "", "with qkit questions wait"},
		{true, "", "with the form in your client or with qkit questions wait"},
		{false, "http://127.0.0.1:8080/", "with qkit questions wait or on the web page at http://127.0.0.1:8080/"},
		{true, "http://127.0.0.1:8080/", "with the form in your client, with qkit questions wait or on the web page at http://127.0.0.1:8080/"},
	} {
		if got := AnswerHint(tc.form, tc.page); got != tc.want {
			t.Errorf("AnswerHint(%v, %q) = %q, want %q", tc.form, tc.page, got, tc.want)
		}
	}
}
